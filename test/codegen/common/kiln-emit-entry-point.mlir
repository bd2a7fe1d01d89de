// The second case fails, so split runs exit non-zero; check each stream.
// RUN: not kiln-opt %s --split-input-file --kiln-emit-entry-point=prefix=net 2>/dev/null | FileCheck %s
// RUN: not kiln-opt %s --split-input-file --kiln-emit-entry-point=prefix=net 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR

// @main becomes internal; the entry loads one pointer per buffer, in order.
// CHECK: llvm.func internal @net_main(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK: llvm.func @net_entry(%[[BUF:.*]]: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[BUF]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[BUF]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A1:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call @net_main(%[[A0]], %[[A1]])
module {
  llvm.func @main(%in: !llvm.ptr, %out: !llvm.ptr) {
    llvm.return
  }
}

// -----

// A dynamic @main (kiln-dynamic-entry) takes its input pointers, then the
// shapes array, then the address of the output slots in `buffers`.
// CHECK: llvm.func @net_entry(%[[BUF:.*]]: !llvm.ptr, %[[SHAPES:.*]]: !llvm.ptr)
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[BUF]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[SLOTS:.*]] = llvm.getelementptr %[[BUF]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.call @net_main(%[[A0]], %[[SHAPES]], %[[SLOTS]])
module {
  llvm.func @main(%in: !llvm.ptr, %shapes: !llvm.ptr, %slots: !llvm.ptr) attributes {kiln.dynamic_entry} {
    llvm.return
  }
}

// -----

// ERR: kiln-emit-entry-point expects an llvm.func @main
module {
  llvm.func @other() {
    llvm.return
  }
}
