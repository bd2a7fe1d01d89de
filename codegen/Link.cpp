//===- Link.cpp - executables and static libraries ------------------------===//
#include "codegen/Link.h"

#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;

namespace kiln {

/// The runtime's folder for `triple`: the architecture for Linux (x86_64,
/// aarch64), arm64-apple-macosx for macOS.
static std::string runtimeFolder(const Triple &triple) {
  std::string arch = triple.getArchName().str();
  return triple.isOSDarwin() ? arch + "-apple-macosx" : arch;
}

bool findRuntime(StringRef root, StringRef triple, RuntimeLocation &out, std::string &error) {
  SmallString<256> dir(root);
  std::string folder = runtimeFolder(Triple(triple));
  sys::path::append(dir, folder);
  out.dir = std::string(dir);
  if (!sys::fs::exists(out.runtimeArchive())) {
    error = "no kiln runtime for " + folder + " at " + out.dir +
            " (build it, or pass --runtime-dir)";
    return false;
  }
  return true;
}

/// clang-22 from the LLVM install drives the system linker for any triple.
static std::string findLinkerDriver() {
  if (const char *cc = std::getenv("KILN_CC"))
    return cc;
  for (StringRef name : {"/usr/lib/llvm-22/bin/clang", "clang-22", "clang", "cc"}) {
    if (sys::fs::can_execute(name))
      return name.str();
    if (auto found = sys::findProgramByName(name))
      return *found;
  }
  return "cc";
}

static bool run(StringRef program, ArrayRef<StringRef> args, std::string &error) {
  std::string message;
  if (sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0, &message) == 0)
    return true;
  error = "linking with '" + program.str() + "' failed" + (message.empty() ? "" : ": " + message);
  return false;
}

/// A Mach-O executable for macOS, linked by ld64.lld against the runtime's
/// stub SDK (sdk/: .tbd stubs of libSystem, libobjc, Metal, Foundation), so
/// no Apple SDK is needed; ld64.lld signs it ad hoc, as arm64 macOS requires.
static bool linkMacExecutable(StringRef object, const RuntimeLocation &runtime,
                              const Triple &triple, StringRef output, std::string &error) {
  std::string linker = "ld64.lld";
  for (StringRef name : {"/usr/lib/llvm-22/bin/ld64.lld", "ld64.lld-22", "ld64.lld"}) {
    if (sys::fs::can_execute(name)) {
      linker = name.str();
      break;
    }
    if (auto found = sys::findProgramByName(name)) {
      linker = *found;
      break;
    }
  }
  std::string version = triple.getOSVersion().getAsString();
  std::string sdk = runtime.dir + "/sdk", arch = triple.getArchName().str();
  std::string mainArchive = runtime.mainArchive(), runtimeArchive = runtime.runtimeArchive();
  SmallVector<StringRef> args = {linker,         "-arch",      arch,   "-platform_version",
                                 "macos",        version,      version, "-syslibroot",
                                 sdk,            "-o",         output,  object,
                                 mainArchive,    runtimeArchive, "-lSystem", "-lobjc",
                                 "-framework",   "Metal",      "-framework", "Foundation"};
  return run(linker, args, error);
}

bool linkExecutable(StringRef object, const RuntimeLocation &runtime, StringRef triple,
                    StringRef output, std::string &error) {
  Triple tt(triple);
  if (tt.isOSDarwin())
    return linkMacExecutable(object, runtime, tt, output, error);
  std::string driver = findLinkerDriver();
  std::string targetFlag = "--target=" + tt.getArchName().str() + "-linux-gnu";
  std::string mainArchive = runtime.mainArchive(), runtimeArchive = runtime.runtimeArchive();
  SmallVector<StringRef> args = {driver,         targetFlag, object, mainArchive,
                                 runtimeArchive, "-lm",      "-lpthread", "-o", output};
#ifdef KILN_SANITIZE_FLAGS
  // A sanitized build's host runtime needs the sanitizers' own runtimes
  // (its cross runtimes are not instrumented).
  if (tt.getArch() == Triple(sys::getProcessTriple()).getArch())
    args.push_back(KILN_SANITIZE_FLAGS);
#endif
  return run(driver, args, error);
}

std::string librariesToLink(StringRef triple) {
  return Triple(triple).isOSDarwin() ? "-framework Metal -framework Foundation -lobjc"
                                     : "-lm -lpthread";
}

bool writeStaticLibrary(StringRef objectBytes, StringRef objectName,
                        const RuntimeLocation &runtime, StringRef triple, StringRef output,
                        std::string &error) {
  auto runtimeBuffer = MemoryBuffer::getFile(runtime.runtimeArchive());
  if (!runtimeBuffer) {
    error = "cannot read " + runtime.runtimeArchive();
    return false;
  }
  Error err = Error::success();
  object::Archive archive((*runtimeBuffer)->getMemBufferRef(), err);
  if (err) {
    error = "corrupt runtime archive: " + toString(std::move(err));
    return false;
  }
  std::vector<NewArchiveMember> members;
  members.emplace_back(MemoryBufferRef(objectBytes, objectName));
  for (const object::Archive::Child &child : archive.children(err)) {
    Expected<NewArchiveMember> member = NewArchiveMember::getOldMember(child, true);
    if (!member) {
      error = toString(member.takeError());
      return false;
    }
    members.push_back(std::move(*member));
  }
  if (err) {
    error = toString(std::move(err));
    return false;
  }
  if (Error e = writeArchive(output, members, SymtabWritingMode::NormalSymtab,
                             Triple(triple).isOSDarwin() ? object::Archive::K_DARWIN
                                                         : object::Archive::K_GNU,
                             /*Deterministic=*/true,
                             /*Thin=*/false)) {
    error = toString(std::move(e));
    return false;
  }
  return true;
}

} // namespace kiln
