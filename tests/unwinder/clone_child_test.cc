// runtime.clone's child side decoded from synthetic code of both shapes (Go 1.19-1.27's
// sys_linux_amd64.s / sys_linux_arm64.s), and what is refused when the shape differs.
#include "unwinder/clone_child.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace sb::unwinder {
namespace {

constexpr uint64_t kEntry = 0x487b00;

// amd64: MOVL $56, AX ; SYSCALL ; CMPQ AX, $0 ; JEQ +4 ; MOVL AX, 0x30(SP) ; RET ; MOVQ SI, SP ; ...
std::string Amd64Clone(int8_t jeq = 5) {
  const unsigned char c[] = {
      0xb8, 0x38, 0x00, 0x00, 0x00,  // MOVL $56, AX
      0x0f, 0x05,                    // SYSCALL
      0x48, 0x83, 0xf8, 0x00,        // CMPQ AX, $0
      0x74, static_cast<unsigned char>(jeq),  // JEQ rel8
      0x89, 0x44, 0x24, 0x30,        // MOVL AX, 0x30(SP)
      0xc3,                          // RET
      0x48, 0x89, 0xf4,              // MOVQ SI, SP (child)
      0x41, 0xff, 0xd4};             // CALL R12
  return std::string(reinterpret_cast<const char*>(c), sizeof(c));
}

std::string Words(const std::vector<uint32_t>& w) {
  std::string s(w.size() * 4, '\0');
  memcpy(s.data(), w.data(), s.size());
  return s;
}

// arm64: MOVD $220, R8 ; SVC ; CMP ZR, R0 ; BEQ child ; MOVW R0, ret ; RET ; child: LDR ...
std::string Arm64Clone(uint32_t beq = 0x54000060u /* B.EQ +12 */) {
  return Words({0xd2801b88u, 0xd4000001u, 0xeb1f001fu, beq, 0xb9003be0u, 0xd65f03c0u, 0xf85e03eau, 0xd63f0180u});
}

TEST(CloneChild, Amd64ChildSideStartsAfterTheParentsRet) {
  std::string code = Amd64Clone();
  CloneChild c = FindCloneChildInCode(sym::Arch::kAmd64, kEntry, code);
  ASSERT_TRUE(c.found) << c.why;
  EXPECT_EQ(c.child_lo, kEntry + 18);  // past RET: MOVQ SI, SP
  EXPECT_EQ(c.child_hi, kEntry + code.size());
  EXPECT_EQ(c.shared_lo, kEntry + 7);  // after SYSCALL
  EXPECT_EQ(c.shared_hi, c.child_lo);
}

TEST(CloneChild, Arm64ChildSideStartsAfterTheParentsRet) {
  std::string code = Arm64Clone();
  CloneChild c = FindCloneChildInCode(sym::Arch::kArm64, kEntry, code);
  ASSERT_TRUE(c.found) << c.why;
  EXPECT_EQ(c.child_lo, kEntry + 24);
  EXPECT_EQ(c.child_hi, kEntry + 32);
  EXPECT_EQ(c.shared_hi, 0u);  // arm64: the child's own code only
}

// The branch must land right after the parent's RET: that is what proves the child side.
TEST(CloneChild, ABranchElsewhereIsNoProof) {
  CloneChild a = FindCloneChildInCode(sym::Arch::kAmd64, kEntry, Amd64Clone(/*jeq=*/9));
  EXPECT_FALSE(a.found);
  EXPECT_NE(a.why.find("the parent's return"), std::string::npos) << a.why;  // it would run the child's code
  CloneChild b = FindCloneChildInCode(sym::Arch::kArm64, kEntry, Arm64Clone(0x54000080u));  // B.EQ +16
  EXPECT_FALSE(b.found);
  EXPECT_NE(b.why.find("does not skip the parent's RET"), std::string::npos) << b.why;
}

TEST(CloneChild, OtherShapesAreRefusedWithTheReason) {
  EXPECT_NE(FindCloneChildInCode(sym::Arch::kAmd64, kEntry, std::string("\x90\x90\xc3", 3)).why.find("no SYSCALL"),
            std::string::npos);
  EXPECT_FALSE(FindCloneChildInCode(sym::Arch::kAmd64, kEntry, Amd64Clone().substr(0, 10)).found);  // cut short
  std::string no_cmp = Amd64Clone();
  no_cmp[7] = '\x90';  // NOP where CMPQ starts
  EXPECT_FALSE(FindCloneChildInCode(sym::Arch::kAmd64, kEntry, no_cmp).found);
  EXPECT_NE(FindCloneChildInCode(sym::Arch::kArm64, kEntry, Words({0xd503201fu})).why.find("no SVC"), std::string::npos);
  EXPECT_FALSE(FindCloneChildInCode(sym::Arch::kArm64, kEntry, Words({0xd4000001u, 0xd503201fu})).found);  // NOP, no CMP
  EXPECT_FALSE(FindCloneChildInCode(sym::Arch::kUnknown, kEntry, Amd64Clone()).found);
  EXPECT_FALSE(FindCloneChildInCode(sym::Arch::kAmd64, kEntry, "").found);
}

}  // namespace
}  // namespace sb::unwinder
