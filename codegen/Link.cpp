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

bool findRuntime(StringRef root, StringRef arch, RuntimeLocation &out, std::string &error) {
  SmallString<256> dir(root);
  sys::path::append(dir, arch);
  out.dir = std::string(dir);
  if (!sys::fs::exists(out.runtimeArchive())) {
    error = "no kiln runtime for " + arch.str() + " at " + out.dir +
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

bool linkExecutable(StringRef object, const RuntimeLocation &runtime, StringRef triple,
                    StringRef output, std::string &error) {
  std::string driver = findLinkerDriver();
  Triple tt(triple);
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
  std::string message;
  int rc = sys::ExecuteAndWait(driver, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0) {
    error = "linking with '" + driver + "' failed" + (message.empty() ? "" : ": " + message);
    return false;
  }
  return true;
}

bool writeStaticLibrary(StringRef objectBytes, StringRef objectName,
                        const RuntimeLocation &runtime, StringRef output, std::string &error) {
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
                             object::Archive::K_GNU, /*Deterministic=*/true,
                             /*Thin=*/false)) {
    error = toString(std::move(e));
    return false;
  }
  return true;
}

} // namespace kiln
