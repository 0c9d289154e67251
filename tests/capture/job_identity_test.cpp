#include "capture/job_identity.h"

#include <gtest/gtest.h>

namespace trainwatch::capture {
namespace {

using namespace std::string_literals;

TEST(IdentifyJob, TheFirstProcessThatSaysWinsInTheDocumentedOrder) {
  const std::string torchrun =
      "RANK=5\0LOCAL_RANK=1\0GROUP_RANK=2\0TORCHELASTIC_RUN_ID=llama-7\0"
      "MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0SLURM_JOB_ID=4242\0"s;
  const std::string other = "RANK=4\0LOCAL_RANK=0\0GROUP_RANK=2\0"s;
  const detect::JobIdentity job = IdentifyJob({torchrun, other}, {}, "gpu-17");
  EXPECT_EQ(job.id, "llama-7");
  EXPECT_EQ(job.id_from, "TORCHELASTIC_RUN_ID");
  EXPECT_EQ(job.node, "gpu-17");
  EXPECT_EQ(job.node_from, "hostname");
  EXPECT_EQ(job.node_rank, 2);
  EXPECT_EQ(job.ranks, (std::vector<int>{4, 5}));
}

TEST(IdentifyJob, TorchrunsDefaultRunIdIsNoneAndTheMasterIsTheLastResort) {
  const std::string rank = "TORCHELASTIC_RUN_ID=none\0MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0"s;
  detect::JobIdentity job = IdentifyJob({rank}, {}, "h");
  EXPECT_EQ(job.id, "10.0.0.1:29500");
  EXPECT_EQ(job.id_from, "MASTER_ADDR:MASTER_PORT");
  job = IdentifyJob({"SLURM_JOB_ID=4242\0"s, rank}, {}, "h");
  EXPECT_EQ(job.id, "4242");
  EXPECT_TRUE(IdentifyJob({"PATH=/bin\0"s}, {}, "h").id.empty());
  EXPECT_TRUE(IdentifyJob({}, {}, "h").id.empty());
}

TEST(IdentifyJob, TheConfigComesFirstAndNamesTheNode) {
  config::ClusterConfig cluster;
  cluster.job_id_variables = {"MY_RUN"};
  cluster.node_name_env = "k8s-node-3";
  const std::string rank = "SLURM_JOB_ID=4242\0MY_RUN=exp-12\0"s;
  detect::JobIdentity job = IdentifyJob({rank}, cluster, "pod-abc");
  EXPECT_EQ(job.id, "exp-12");
  EXPECT_EQ(job.id_from, "MY_RUN");
  EXPECT_EQ(job.node, "k8s-node-3");
  EXPECT_EQ(job.node_from, "NODE_NAME");
  cluster.job_id = "fixed-job";
  cluster.node_name = "gpu-17";
  job = IdentifyJob({rank}, cluster, "pod-abc");
  EXPECT_EQ(job.id, "fixed-job");
  EXPECT_EQ(job.id_from, "config");
  EXPECT_EQ(job.node, "gpu-17");
  EXPECT_EQ(job.node_from, "config");
}

}  // namespace
}  // namespace trainwatch::capture
