// Entry points of the fuzz targets. Each is the body of a libFuzzer target
// (fuzz_*.cc) and is also called by fuzz_regression_test over the saved corpus, so inputs that
// once crashed are replayed in every normal test run.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sb::fuzz {

int FuzzElf(const uint8_t* data, size_t size);
int FuzzPclntab(const uint8_t* data, size_t size);
int FuzzBuildInfo(const uint8_t* data, size_t size);
int FuzzPprofReader(const uint8_t* data, size_t size);  // profile/pprof_reader
int FuzzCoreFile(const uint8_t* data, size_t size);     // coredump/core_file
int FuzzCaseFile(const uint8_t* data, size_t size);     // coredump/replay/case_file
int FuzzAsmOffsets(const uint8_t* data, size_t size);   // unwinder/asm_offsets (decoders, tracer)
int FuzzDwarfOffsets(const uint8_t* data, size_t size); // unwinder/dwarf_offsets (libdwarf)
int FuzzTlsSlot(const uint8_t* data, size_t size);      // unwinder/tls_slot (Zydis)
int FuzzCodeSites(const uint8_t* data, size_t size);    // exitprobe/code_sites
int FuzzDecompress(const uint8_t* data, size_t size);   // coredump/decompress, sparse_image
int FuzzBuildIdNote(const uint8_t* data, size_t size);  // coredump/build_id_note
int FuzzProcCgroup(const uint8_t* data, size_t size);   // agent/cgroup_info
int FuzzIndexLine(const uint8_t* data, size_t size);    // agent/window_index
int FuzzServeQuery(const uint8_t* data, size_t size);   // serve/ query, --listen, spool .json
int FuzzGoroutineLabels(const uint8_t* data, size_t size);  // ebpf/unwind/goroutine_labels.h
int FuzzKallsyms(const uint8_t* data, size_t size);     // symbolizer/kallsyms
int FuzzSampleRecord(const uint8_t* data, size_t size); // unwinder/sample_record (the ring)
int FuzzXpStackRecord(const uint8_t* data, size_t size); // exitprobe/stack_record (its ring)

}  // namespace sb::fuzz
