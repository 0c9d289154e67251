#include "collect/container.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace trainwatch::collect {
namespace {

const std::string kId = "2403ccfe427f1dc7b6120dccb9ac58c2f8456950380d587a9f33ea7f00dd303d";

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(TRAINWATCH_TEST_SHARED_DIR) + "/fixtures/docker/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Container, CgroupForms) {
  EXPECT_EQ(ContainerFromCgroup("12:memory:/docker/" + kId + "\n")->id, kId);
  EXPECT_EQ(ContainerFromCgroup("0::/system.slice/docker-" + kId + ".scope\n")->runtime, "docker");
  EXPECT_EQ(ContainerFromCgroup("0::/kubepods.slice/kubepods-burstable.slice/"
                                "kubepods-burstable-pod1.slice/cri-containerd-" +
                                kId + ".scope\n")
                ->runtime,
            "kubernetes");
  EXPECT_EQ(ContainerFromCgroup("0::/machine.slice/libpod-" + kId + ".scope\n")->runtime, "podman");
  EXPECT_FALSE(ContainerFromCgroup("0::/\n").has_value());
  EXPECT_FALSE(ContainerFromCgroup("0::/user.slice/user-1000.slice/session-3.scope\n"));
}

TEST(Container, RealFixtures) {
  const std::string v1 = Fixture("proc-self-cgroup-v1-docker.txt");
  if (v1.empty()) {
    GTEST_SKIP() << "../shared/fixtures is absent";
  }
  EXPECT_EQ(ContainerFromCgroup(v1)->id, kId);
  EXPECT_FALSE(ContainerFromCgroup(Fixture("proc-self-cgroup-v2-docker.txt")));
  EXPECT_EQ(ContainerFromMountinfo(Fixture("proc-self-mountinfo-v2-docker-excerpt.txt"))->id,
            "66826257e096f3c9d04f17577dab7ef5d84078c88f18f646fd37050ec5b6b4f6");
}

}  // namespace
}  // namespace trainwatch::collect
