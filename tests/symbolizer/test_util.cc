#include "tests/symbolizer/test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <elf.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace sb::sym::test {

std::string MakeTempDir(const std::string& tag) {
  return sb::test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", tag);
}

std::string GoEnv() {
  return "env GOCACHE=" + Quote(SB_GOCACHE) +
         " GO111MODULE=off GOFLAGS= GOPROXY=off GOTOOLCHAIN=local ";
}

const GoPrograms& BuildGoPrograms() {
  static GoPrograms progs;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string dir = MakeTempDir("symtest");
    std::string src = Quote(SB_TEST_SOURCE_DIR "/testdata/symtest/main.go");
    struct Variant {
      std::string* out;
      const char* name;
      const char* flags;
    } variants[] = {
        {&progs.plain, "plain", ""},
        {&progs.stripped, "stripped", "-ldflags='-s -w'"},
        {&progs.pie, "pie", "-buildmode=pie"},
        {&progs.pie_stripped, "pie_stripped", "-buildmode=pie -ldflags='-s -w'"},
    };
    for (const Variant& v : variants) {
      std::string out = dir + "/" + v.name;
      auto r = RunCommand("cd " + Quote(dir) + " && " + GoEnv() + Quote(SB_GO_EXECUTABLE) +
                   " build " + v.flags + " -o " + Quote(out) + " " + src);
      if (r.status != 0) {
        progs.error += std::string(v.name) + ": " + r.out;
        continue;
      }
      *v.out = out;
    }
  });
  return progs;
}

std::string BuildArm64ExternalSymtest(std::string* error) {
  static std::string path, why;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string dir = MakeTempDir("symtest-arm64-ext");
    std::string out = dir + "/symtest";
    auto r = RunCommand("cd " + Quote(dir) + " && " + GoEnv() +
                        "CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=aarch64-linux-gnu-gcc " + Quote(SB_GO_EXECUTABLE) +
                        " build -ldflags=-linkmode=external -o " + Quote(out) + " " +
                        Quote(SB_TEST_SOURCE_DIR "/testdata/symtest/main.go"));
    if (r.status != 0) why = "arm64 external-link build failed (tools/install-deps.sh installs gcc-aarch64-linux-gnu): " + r.out;
    else path = out;
  });
  if (error) *error = why;
  return path;
}

std::string RunArm64Prefix() { return "qemu-aarch64 -L /usr/aarch64-linux-gnu "; }

std::vector<ObjdumpFunc> Objdump(const std::string& binary) {
  std::vector<ObjdumpFunc> out;
  auto r = RunCommand(GoEnv() + Quote(SB_GO_EXECUTABLE) + " tool objdump " + Quote(binary), false);
  std::istringstream in(r.out);
  std::string line;
  // "TEXT name(SB) file" then "  file:line\t0xADDR\tbytes\tasm" per instruction.
  while (std::getline(in, line)) {
    if (line.rfind("TEXT ", 0) == 0) {
      size_t end = line.rfind("(SB)");
      if (end == std::string::npos) continue;
      ObjdumpFunc f;
      f.name = line.substr(5, end - 5);
      out.push_back(std::move(f));
      continue;
    }
    if (out.empty()) continue;
    std::istringstream ls(line);
    std::string fileline, addr;
    if (!(ls >> fileline >> addr) || addr.rfind("0x", 0) != 0) continue;
    uint64_t pc = std::strtoull(addr.c_str(), nullptr, 16);
    if (out.back().insns.empty()) out.back().entry = pc;
    out.back().insns.emplace_back(pc, fileline);
    while (!line.empty() && (line.back() == '\t' || line.back() == ' ')) line.pop_back();
    size_t tab = line.rfind('\t');
    out.back().asm_text.push_back(tab == std::string::npos ? "" : line.substr(tab + 1));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Addr2Line(const std::string& binary,
                                                           const std::vector<uint64_t>& pcs) {
  std::string dir = MakeTempDir("addr2line");
  std::string input = dir + "/pcs";
  FILE* f = fopen(input.c_str(), "w");
  if (f == nullptr) return {};
  for (uint64_t pc : pcs) fprintf(f, "0x%llx\n", static_cast<unsigned long long>(pc));
  fclose(f);
  auto r = RunCommand(GoEnv() + Quote(SB_GO_EXECUTABLE) + " tool addr2line " + Quote(binary) + " < " +
                   Quote(input),
               false);
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(r.out);
  std::string fn, fl;
  while (std::getline(in, fn) && std::getline(in, fl)) out.emplace_back(fn, fl);
  return out;
}

std::string LefthookDir(std::string* error) {
  std::string dest = SB_TEST_SOURCE_DIR "/../../.cache/lefthook";
  auto r = RunCommand(Quote(SB_TEST_SOURCE_DIR "/../../tools/fetch-lefthook.sh") + " " + Quote(dest));
  if (r.status != 0) {
    *error = "tools/fetch-lefthook.sh failed: " + r.out;
    return "";
  }
  return dest;
}

std::string MakeMiniElf(uint16_t e_type, const std::vector<MiniSegment>& segments) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = e_type;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phoff = segments.empty() ? 0 : sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<uint16_t>(segments.size());
  std::string out(sizeof(eh) + segments.size() * sizeof(Elf64_Phdr), '\0');
  std::vector<Elf64_Phdr> phdrs;
  for (const MiniSegment& s : segments) {
    while (out.size() % 16 != 0) out.push_back('\0');
    Elf64_Phdr ph{};
    ph.p_type = s.type;
    ph.p_flags = s.flags;
    ph.p_offset = out.size();
    ph.p_vaddr = ph.p_paddr = s.vaddr;
    ph.p_filesz = ph.p_memsz = s.data.size();
    ph.p_align = 16;
    phdrs.push_back(ph);
    out += s.data;
  }
  std::memcpy(out.data(), &eh, sizeof(eh));
  for (size_t i = 0; i < phdrs.size(); i++) {
    std::memcpy(out.data() + sizeof(eh) + i * sizeof(Elf64_Phdr), &phdrs[i], sizeof(Elf64_Phdr));
  }
  return out;
}

}  // namespace sb::sym::test
