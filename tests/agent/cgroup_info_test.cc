#include "agent/cgroup_info.h"

#include <gtest/gtest.h>

namespace sb::agent {
namespace {

const std::string kId = "4c1f9d3e6a2b8c7d5e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d";

TEST(CgroupInfoTest, DockerSystemdDriverOnV2) {
  auto i = ParseProcCgroup("0::/system.slice/docker-" + kId + ".scope\n");
  EXPECT_EQ(i.container_id, kId);
  EXPECT_EQ(i.unit, "docker-" + kId + ".scope");
  ASSERT_EQ(i.entries.size(), 1u);
  EXPECT_EQ(i.entries[0].hierarchy_id, "0");
  EXPECT_EQ(i.entries[0].controllers, "");
}

TEST(CgroupInfoTest, DockerCgroupfsDriverOnV1) {
  auto i = ParseProcCgroup("12:pids:/docker/" + kId + "\n4:memory:/docker/" + kId + "\n0::/\n");
  EXPECT_EQ(i.container_id, kId);
  EXPECT_EQ(i.unit, "");
}

TEST(CgroupInfoTest, Containerd) {
  EXPECT_EQ(ContainerIdFromPath("/kubepods/besteffort/pod0a1b2c3d-1111-2222-3333-444455556666/" + kId), kId);
  EXPECT_EQ(ContainerIdFromPath("/kubepods.slice/kubepods-pod12.slice/cri-containerd-" + kId + ".scope"), kId);
  EXPECT_EQ(ContainerIdFromPath("/system.slice/containerd.service/kubepods-besteffort-pod12.slice:cri-containerd:" + kId),
            kId);
  auto i = ParseProcCgroup("0::/system.slice/containerd.service/kubepods-besteffort-pod12.slice:cri-containerd:" + kId);
  EXPECT_EQ(i.unit, "containerd.service");
}

TEST(CgroupInfoTest, CrioSkipsConmon) {
  EXPECT_EQ(ContainerIdFromPath("/kubepods.slice/kubepods-burstable.slice/crio-" + kId + ".scope"), kId);
  EXPECT_EQ(ContainerIdFromPath("/kubepods.slice/crio-conmon-" + kId + ".scope"), "");
}

TEST(CgroupInfoTest, Podman) {
  EXPECT_EQ(ContainerIdFromPath("/machine.slice/libpod-" + kId + ".scope/container"), kId);
  EXPECT_EQ(ContainerIdFromPath("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId + ".scope"), kId);
}

TEST(CgroupInfoTest, SystemdServiceAndSession) {
  auto i = ParseProcCgroup("9:name=systemd:/system.slice/nginx.service\n4:memory:/system.slice/nginx.service\n0::/\n");
  EXPECT_EQ(i.unit, "nginx.service");
  EXPECT_EQ(i.container_id, "");
  EXPECT_EQ(ParseProcCgroup("0::/user.slice/user-1000.slice/session-3.scope\n").unit, "session-3.scope");
  EXPECT_EQ(ParseProcCgroup("0::/init.scope\n").unit, "init.scope");
}

TEST(CgroupInfoTest, NothingRecognised) {
  for (const char* text : {"", "\n\n", "garbage", "0:", "::", "0::/\n", "1:cpu:/a/b\n",
                           "0::/docker/notahexid\n", "0::/.scope\n"}) {
    auto i = ParseProcCgroup(text);
    EXPECT_EQ(i.container_id, "") << text;
    EXPECT_EQ(i.unit, "") << text;
  }
  // A 63- or 65-digit run is no id.
  EXPECT_EQ(ContainerIdFromPath("/docker/" + kId.substr(1)), "");
  EXPECT_EQ(ContainerIdFromPath("/docker/" + kId + "0"), "");
}

}  // namespace
}  // namespace sb::agent
