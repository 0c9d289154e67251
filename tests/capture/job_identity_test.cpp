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

TEST(IdentifyJob, TheAttemptAndTheSlurmStepFromTheLauncher) {
  const std::string launcher = "TORCHELASTIC_RUN_ID=llama-7\0"s;  // torchrun's agent: no count
  const std::string worker = "RANK=0\0TORCHELASTIC_RUN_ID=llama-7\0TORCHELASTIC_RESTART_COUNT=2\0"s;
  EXPECT_EQ(IdentifyJob({launcher, worker}, {}, "h").restart, "TORCHELASTIC_RESTART_COUNT=2");
  const std::string task =
      "SLURM_JOB_ID=4242\0SLURM_STEP_ID=3\0SLURM_RESTART_COUNT=1\0SLURM_PROCID=0\0"s;
  const detect::JobIdentity job = IdentifyJob({task}, {}, "h");
  EXPECT_EQ(job.restart, "SLURM_RESTART_COUNT=1");
  EXPECT_EQ(job.slurm_step, "3");
  // A first run says nothing; a count too long to be one is not taken.
  EXPECT_EQ(IdentifyJob({"SLURM_JOB_ID=1\0"s}, {}, "h").restart, "");
  EXPECT_EQ(IdentifyJob({"SLURM_RESTART_COUNT=" + std::string(40, '9') + "\0"s}, {}, "h").restart,
            "");
}

TEST(IdentifyJob, SlurmsStepDaemonNamesItsJobByItsTitle) {
  source::WriterProcess stepd;
  stepd.pid = 31459;
  stepd.uid = 0;
  stepd.cmdline = "slurmstepd: [4242.batch]\0"s;
  stepd.environ = "SLURM_CONF=/etc/slurm/slurm.conf\0"s;
  const std::string environ = JobEnvironOf(stepd);
  EXPECT_EQ(environ, "SLURM_JOB_ID=4242\0SLURM_STEP_ID=batch\0SLURM_CONF=/etc/slurm/slurm.conf\0"s);
  const detect::JobIdentity job = IdentifyJob({environ}, {}, "h");
  EXPECT_EQ(job.id, "4242");
  EXPECT_EQ(job.slurm_step, "batch");
  // Another user's process of that title, or a title of another shape, names nothing.
  stepd.uid = 1000;
  EXPECT_EQ(JobEnvironOf(stepd), stepd.environ);
  stepd.uid = 0;
  for (const std::string& title :
       {"slurmstepd: [42 --all.0]\0"s, "slurmstepd: [4242\0"s, "python slurmstepd: [1.0]\0"s}) {
    stepd.cmdline = title;
    EXPECT_EQ(JobEnvironOf(stepd), stepd.environ) << title;
  }
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
