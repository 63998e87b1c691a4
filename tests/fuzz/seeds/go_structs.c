// Source of the fuzz_dwarf_offsets seeds: C structs laid out like Go 1.19's runtime.g/m/gobuf/
// stack, whose DWARF names are then renamed (same length) to the Go names. Regenerate with
//   gcc -g -gdwarf-4 -O0 -nostdlib -static -fno-asynchronous-unwind-tables -o g go_structs.c
//   sed -i 's/runtime_stack/runtime.stack/; s/runtime_gobuf/runtime.gobuf/;
//           s/runtime_m\x0/runtime.m\x0/; s/runtime_g\x0/runtime.g\x0/' g
//   objcopy -R .comment -R .symtab -R .strtab g go_structs_dwarf4
//   objcopy --compress-debug-sections=zlib-gabi go_structs_dwarf4 go_structs_dwarf4_zlib
//   objcopy --compress-debug-sections=zlib-gnu go_structs_dwarf4 go_structs_dwarf4_zdebug
// (and -gdwarf-5 for go_structs_dwarf5).
typedef unsigned long uintptr;
struct runtime_stack { uintptr lo, hi; };
struct runtime_gobuf { uintptr sp, pc, g, ctxt, ret, lr, bp; };
struct runtime_m { void *g0; struct runtime_gobuf morebuf; char pad[56]; unsigned long procid; void *gsignal; char pad2[104]; void *curg; char pad3[600]; uintptr vdsoSP, vdsoPC; };
struct runtime_g { struct runtime_stack stack; uintptr stackguard0, stackguard1; void *_panic, *_defer; struct runtime_m *m; struct runtime_gobuf sched; uintptr syscallsp, syscallpc, stktopsp; void *param; unsigned atomicstatus; unsigned stackLock; long goid; };
struct runtime_g G;
struct runtime_m M;
void _start(void) {}
