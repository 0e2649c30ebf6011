// One test per mapping rule of docs/riseml-yml.md: what each riseml.yml setting becomes in
// the sbatch script. Small inline files; built-in site defaults unless a test sets a site.
#include <algorithm>

#include <gtest/gtest.h>

#include "job_layout.hpp"
#include "run_environment.hpp"
#include "sbatch_directive.hpp"
#include "test_support.hpp"

namespace riseml::test {
namespace {

struct Result {
  std::string script;
  std::string diagnostics;
  std::vector<std::string> options;
  std::vector<std::string> sruns;
};

// "project: p" plus the given train section body (indented by the caller) and extra top-level text.
Result translate_train(const std::string& train, const std::string& tail = "",
                       const SiteConfig& site = SiteConfig{}) {
  const std::string text = "project: p\ntrain:\n" + train + tail;
  Translation t = translate_text(text, "riseml.yml", site);
  Result r;
  r.diagnostics = t.diagnostics.format();
  EXPECT_TRUE(t.script.has_value()) << text << "\n" << r.diagnostics;
  if (!t.script) return r;
  r.script = *t.script;
  r.options = sbatch_options(r.script);
  r.sruns = srun_lines(r.script);
  EXPECT_EQ(bash_syntax_errors(r.script), "") << r.script;
  return r;
}

bool has(const std::vector<std::string>& v, const std::string& item) {
  return std::find(v.begin(), v.end(), item) != v.end();
}

// The options that start with `prefix` (e.g. "--nodes=").
std::vector<std::string> with_prefix(const std::vector<std::string>& v, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& s : v)
    if (s.rfind(prefix, 0) == 0) out.push_back(s);
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

using Options = std::vector<std::string>;

// ---- Horovod

TEST(MappingHorovod, WorkersAndGpusBecomeNodesTasksAndGpusPerNode) {
  auto r = translate_train(R"(  tensorflow:
    horovod: {workers: 3}
  resources: {gpus: 4, cpus: 8, mem: 2048}
  run: python train.py
)");
  EXPECT_EQ(with_prefix(r.options, "--nodes="), Options{"--nodes=3"});
  EXPECT_EQ(with_prefix(r.options, "--ntasks-per-node="), Options{"--ntasks-per-node=4"});
  EXPECT_EQ(with_prefix(r.options, "--gpus-per-node="), Options{"--gpus-per-node=4"});
  EXPECT_EQ(with_prefix(r.options, "--cpus-per-task="), Options{"--cpus-per-task=2"});
  EXPECT_EQ(with_prefix(r.options, "--mem="), Options{"--mem=2048M"});
  EXPECT_TRUE(with_prefix(r.options, "--ntasks=").empty()) << "per node, not in total";
}

TEST(MappingHorovod, ProcessesDefaultToTheGpuCount) {
  auto r = translate_train(R"(  horovod: {workers: 2}
  resources: {gpus: 2, cpus: 4}
  run: python train.py
)");
  EXPECT_TRUE(has(r.options, "--ntasks-per-node=2"));
  EXPECT_TRUE(has(r.options, "--cpus-per-task=2"));
}

TEST(MappingHorovod, ProcessesDefaultToOneWithoutGpus) {
  auto r = translate_train(R"(  horovod: {workers: 2}
  resources: {gpus: 0, cpus: 3}
  run: python train.py
)");
  EXPECT_TRUE(has(r.options, "--nodes=2"));
  EXPECT_TRUE(has(r.options, "--ntasks-per-node=1"));
  EXPECT_TRUE(has(r.options, "--cpus-per-task=3"));
  EXPECT_TRUE(with_prefix(r.options, "--gpus").empty()) << "no GPU options without GPUs";
}

TEST(MappingHorovod, ExplicitProcessesShareTheGpus) {
  auto r = translate_train(R"(  tensorflow:
    horovod:
      workers: {count: 2, processes: 2}
  resources: {gpus: 4, cpus: 8}
  run: python train.py
)");
  EXPECT_TRUE(has(r.options, "--nodes=2"));
  EXPECT_TRUE(has(r.options, "--ntasks-per-node=2"));
  EXPECT_TRUE(has(r.options, "--gpus-per-node=4"));
  EXPECT_TRUE(has(r.options, "--cpus-per-task=4"));
}

TEST(MappingHorovod, CpusPerTaskIsTheFloorOfCpusOverProcesses) {
  auto r = translate_train(R"(  horovod: {workers: 1}
  resources: {gpus: 4, cpus: 10}
  run: python train.py
)");
  EXPECT_TRUE(has(r.options, "--cpus-per-task=2")) << "floor(10/4)";
  EXPECT_TRUE(contains(r.script, "# Note: cpus 10 per worker over 4 processes gives 2 whole CPU(s) "
                                 "per process."))
      << r.script;
}

TEST(MappingHorovod, CpusPerTaskIsAtLeastOne) {
  auto r = translate_train(R"(  horovod: {workers: 1}
  resources: {gpus: 4, cpus: 2}
  run: python train.py
)");
  EXPECT_TRUE(has(r.options, "--cpus-per-task=1")) << "floor(2/4) is 0";
}

TEST(MappingHorovod, GpusMustBeAMultipleOfProcesses) {
  Translation t = translate_with_defaults(R"(project: p
train:
  horovod:
    workers: {count: 2, processes: 3}
  resources: {gpus: 4, cpus: 8}
  run: python train.py
)",
                                          "riseml.yml");
  EXPECT_FALSE(t.script);
  EXPECT_TRUE(contains(t.diagnostics.format(), "3 processes cannot share 4 GPUs evenly"))
      << t.diagnostics.format();
}

TEST(MappingHorovod, MemIsMegabytesPerNodeRoundedUp) {
  auto r = translate_train(R"(  horovod: {workers: 2}
  resources: {gpus: 1, mem: 1500.25}
  run: python train.py
)");
  EXPECT_EQ(with_prefix(r.options, "--mem"), Options{"--mem=1501M"});
}

TEST(MappingHorovod, OneSrunPerRunLineInOrder) {
  auto r = translate_train(R"(  horovod: {workers: 2}
  resources: {gpus: 2, cpus: 6}
  run:
    - python prepare.py
    - python train.py --epochs 3
    - echo done
)");
  EXPECT_EQ(r.sruns,
            (Options{"srun --label --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=3 --riseml-bind=auto "
                     "bash -c 'python prepare.py'",
                     "srun --label --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=3 --riseml-bind=auto "
                     "bash -c 'python train.py --epochs 3'",
                     "srun --label --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=3 --riseml-bind=auto "
                     "bash -c 'echo done'"}));
}

TEST(MappingHorovod, InstallLinesRunOncePerNodeBeforeTheRunLines) {
  auto r = translate_train(R"(  horovod: {workers: 4}
  resources: {gpus: 1}
  install:
    - pip install -r requirements.txt
    - make data
  run: python train.py
)");
  ASSERT_EQ(r.sruns.size(), 3u) << r.script;
  const std::string per_node = "srun --nodes=\"${SLURM_JOB_NUM_NODES}\" "
                               "--ntasks=\"${SLURM_JOB_NUM_NODES}\" --ntasks-per-node=1 "
                               "--kill-on-bad-exit=1";
  EXPECT_EQ(r.sruns[0], per_node + " bash -c 'pip install -r requirements.txt'");
  EXPECT_EQ(r.sruns[1], per_node + " bash -c 'make data'");
  EXPECT_TRUE(contains(r.sruns[2], "--mpi=pmix")) << r.sruns[2];
  EXPECT_TRUE(contains(r.sruns[2], "'python train.py'"));
}

// ---- the SPANK plugin's binding option

TEST(MappingBind, SiteBindOffLeavesOutTheOption) {
  SiteConfig site;
  site.bind = "off";
  for (const char* train : {"  horovod: {workers: 2}\n  resources: {gpus: 1}\n  run: x\n",
                            "  resources: {gpus: 1}\n  install: y\n  run: x\n"}) {
    auto r = translate_train(train, "", site);
    ASSERT_FALSE(r.sruns.empty());
    for (const auto& line : r.sruns) EXPECT_FALSE(contains(line, "--riseml-bind")) << line;
  }
}

TEST(MappingBind, SiteBindVerboseIsPassedOn) {
  SiteConfig site;
  site.bind = "verbose";
  auto r = translate_train("  resources: {gpus: 1}\n  run: x\n", "", site);
  ASSERT_EQ(r.sruns.size(), 1u);
  EXPECT_TRUE(contains(r.sruns[0], " --riseml-bind=verbose ")) << r.sruns[0];
}

TEST(MappingBind, DefaultIsAuto) {
  auto r = translate_train("  resources: {gpus: 1}\n  run: x\n");
  ASSERT_EQ(r.sruns.size(), 1u);
  EXPECT_TRUE(contains(r.sruns[0], " --riseml-bind=auto ")) << r.sruns[0];
}

// ---- one process

TEST(MappingSingle, OneTaskWithAllTheGpus) {
  auto r = translate_train("  resources: {gpus: 2, cpus: 6, mem: 4096}\n  run: python train.py\n");
  EXPECT_TRUE(has(r.options, "--nodes=1"));
  EXPECT_TRUE(has(r.options, "--ntasks=1"));
  EXPECT_TRUE(has(r.options, "--gpus-per-node=2"));
  EXPECT_TRUE(has(r.options, "--cpus-per-task=6"));
  EXPECT_TRUE(has(r.options, "--mem=4096M"));
  EXPECT_EQ(r.sruns, Options{"srun --label --ntasks=1 --kill-on-bad-exit=1 --cpus-per-task=6 "
                             "--riseml-bind=auto bash -c 'python train.py'"});
}

TEST(MappingSingle, FractionalCpusRoundUpWithANote) {
  auto r = translate_train("  resources: {cpus: .5}\n  run: x\n");
  EXPECT_TRUE(has(r.options, "--cpus-per-task=1"));
  EXPECT_TRUE(contains(r.script, "# Note: cpus 0.5 rounded up to 1: Slurm allocates whole CPUs."));
  r = translate_train("  resources: {cpus: 2.25}\n  run: x\n");
  EXPECT_TRUE(has(r.options, "--cpus-per-task=3"));
}

TEST(MappingSingle, NoResourcesMeansOneCpuAndAWarning) {
  auto r = translate_train("  run: x\n");
  EXPECT_TRUE(has(r.options, "--cpus-per-task=1"));
  EXPECT_TRUE(with_prefix(r.options, "--mem").empty());
  EXPECT_TRUE(with_prefix(r.options, "--gpus").empty());
  EXPECT_TRUE(contains(r.diagnostics, "warning: train.resources: not given")) << r.diagnostics;
}

TEST(MappingSingle, RunAsOneScalarIsOneStep) {
  auto r = translate_train("  resources: {cpus: 1}\n  run: >-\n    python train.py\n    --lr 0.1\n");
  ASSERT_EQ(r.sruns.size(), 1u);
  EXPECT_TRUE(contains(r.sruns[0], "bash -c 'python train.py --lr 0.1'")) << r.sruns[0];
}

// ---- distributed TensorFlow

const char* kDistributed = R"(  tensorflow:
    distributed:
      ps: {count: 2, resources: {cpus: 2, mem: 1000, gpus: 0}}
      worker: 3
      master: {resources: {cpus: 1, mem: 512}}
  resources: {gpus: 1, cpus: 4, mem: 8192}
  run: python train.py
)";

TEST(MappingDistributed, HetjobWithOneComponentPerRole) {
  auto r = translate_train(kDistributed);
  EXPECT_EQ(std::count(r.options.begin(), r.options.end(), "hetjob"), 2) << r.script;
  EXPECT_TRUE(contains(r.script, "# component 0: master\n"));
  EXPECT_TRUE(contains(r.script, "# component 1: ps\n"));
  EXPECT_TRUE(contains(r.script, "# component 2: worker\n"));
  EXPECT_EQ(with_prefix(r.options, "--ntasks="),
            (Options{"--ntasks=1", "--ntasks=2", "--ntasks=3"}));
  // A role's own resources replace the train-level ones whole: master and ps get no GPU;
  // the worker, without its own, gets the train-level ones.
  EXPECT_EQ(with_prefix(r.options, "--cpus-per-task="),
            (Options{"--cpus-per-task=1", "--cpus-per-task=2", "--cpus-per-task=4"}));
  EXPECT_EQ(with_prefix(r.options, "--gpus-per-task="), (Options{"--gpus-per-task=1"}))
      << "only the worker gets a GPU";
  EXPECT_EQ(with_prefix(r.options, "--mem-per-cpu="),
            (Options{"--mem-per-cpu=512M", "--mem-per-cpu=500M", "--mem-per-cpu=2048M"}))
      << "mem per process over cpus per process";
}

TEST(MappingDistributed, EveryRoleIsAStepWithItsTfRole) {
  auto r = translate_train(kDistributed);
  EXPECT_TRUE(has_line(r.script, "export RISEML_TF_ROLES='master:1,ps:2,worker:3'")) << r.script;
  ASSERT_EQ(r.sruns.size(), 3u);
  const char* roles[] = {"master", "ps", "worker"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(contains(r.sruns[i], "--het-group=" + std::to_string(i) + " ")) << r.sruns[i];
    EXPECT_TRUE(contains(r.sruns[i], "RISEML_TF_ROLE=" + std::string(roles[i]) + " "))
        << r.sruns[i];
    EXPECT_TRUE(r.sruns[i].ends_with("bash -c \"${riseml_task_script}\" &")) << r.sruns[i];
  }
  EXPECT_TRUE(contains(r.script, "TF_CONFIG=\"$(riseml tf-config)\"")) << r.script;
}

TEST(MappingDistributed, InstallOncePerNodeOfEachComponentThenRunLinesInEveryTask) {
  auto r = translate_train(R"(  tensorflow:
    distributed: {ps: 1, worker: 1}
  resources: {cpus: 1}
  install: pip install x
  run: [python a.py, python b.py]
)");
  ASSERT_EQ(r.sruns.size(), 6u) << "3 install steps (one per component), 3 role steps: "
                                << r.script;
  for (int i = 0; i < 3; ++i) {
    const std::string group = std::to_string(i);
    EXPECT_TRUE(contains(r.sruns[i], "--het-group=" + group + " --nodes=\"${SLURM_JOB_NUM_NODES_HET_GROUP_" +
                                         group + "}\""))
        << r.sruns[i];
    EXPECT_TRUE(contains(r.sruns[i], "--ntasks-per-node=1")) << r.sruns[i];
    EXPECT_TRUE(r.sruns[i].ends_with("bash -c 'pip install x'")) << r.sruns[i];
  }
  auto parts = lines_starting_with(r.script, "riseml_task_script+=");
  EXPECT_EQ(parts, (Options{"riseml_task_script+=$'\\n''python a.py'",
                            "riseml_task_script+=$'\\n''python b.py'"}));
}

TEST(MappingDistributed, WithParametersIsOneHomogeneousAllocationWithAWarning) {
  auto r = translate_train(std::string(kDistributed) +
                           "  parameters:\n    lr: [0.1, 0.2]\n" +
                           "  concurrency: 1\n");
  EXPECT_FALSE(has(r.options, "hetjob")) << "Slurm has no arrays of heterogeneous jobs";
  EXPECT_TRUE(has(r.options, "--array=0-1%1"));
  EXPECT_EQ(with_prefix(r.options, "--ntasks="), Options{"--ntasks=6"});
  EXPECT_EQ(with_prefix(r.options, "--cpus-per-task="), Options{"--cpus-per-task=4"});
  EXPECT_EQ(with_prefix(r.options, "--gpus-per-task="), Options{"--gpus-per-task=1"});
  EXPECT_TRUE(contains(r.diagnostics,
                       "warning: train.tensorflow.distributed: Slurm cannot run a job array of "
                       "heterogeneous jobs"))
      << r.diagnostics;
  ASSERT_EQ(r.sruns.size(), 3u);
  EXPECT_TRUE(contains(r.sruns[0], "--exact --ntasks=1 ")) << r.sruns[0];
  EXPECT_TRUE(contains(r.sruns[1], "--exact --ntasks=2 ")) << r.sruns[1];
  EXPECT_TRUE(contains(r.sruns[2], "--exact --ntasks=3 ")) << r.sruns[2];
}

TEST(MappingDistributed, WithParametersUnevenMemoryAloneAlsoWarns) {
  auto r = translate_train(R"(  tensorflow:
    distributed:
      ps: 1
      worker: 2
      master: {resources: {mem: 256}}
  resources: {cpus: 1, mem: 128}
  parameters:
    lr: [0.1, 0.2]
  run: python train.py {{lr}}
)");
  EXPECT_EQ(with_prefix(r.options, "--mem-per-cpu="), Options{"--mem-per-cpu=256M"});
  EXPECT_TRUE(contains(r.diagnostics, "the largest role's resources (0 GPU(s), 1 CPU(s), 256M "
                                      "per CPU)"))
      << r.diagnostics;
}

TEST(MappingDistributed, WithParametersEvenResourcesNeedNoWarning) {
  auto r = translate_train(R"(  tensorflow:
    distributed: {ps: 1, worker: 2}
  resources: {cpus: 2, mem: 512}
  parameters:
    lr: [0.1, 0.2]
  run: python train.py {{lr}}
)");
  EXPECT_FALSE(has(r.options, "hetjob"));
  EXPECT_EQ(with_prefix(r.options, "--ntasks="), Options{"--ntasks=4"});
  EXPECT_FALSE(contains(r.diagnostics, "Slurm cannot run")) << r.diagnostics;
}

TEST(MappingDistributed, ParameterServersAreNotWaitedFor) {
  auto r = translate_train(kDistributed);
  EXPECT_TRUE(has_line(r.script,
                       "riseml_waiting=(\"${riseml_master_pid}\" \"${riseml_worker_pid}\")"))
      << r.script;
}

// ---- parameters and concurrency

const char* kSweep = R"(  resources: {cpus: 1}
  parameters:
    lr: [0.1, 0.01]
    epochs: {range: {min: 1, max: 3, step: 1}}
  concurrency: 2
  run: python train.py --lr {{lr}} --epochs {{ epochs }}
)";

TEST(MappingParameters, SweepIsAThrottledJobArray) {
  auto r = translate_train(kSweep);
  EXPECT_EQ(with_prefix(r.options, "--array="), Options{"--array=0-5%2"});
  EXPECT_TRUE(has(r.options, "--output=riseml-%x-%A_%a.out"));
  EXPECT_TRUE(has_line(r.script,
                       "export EXPERIMENT_ID=\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\""));
}

TEST(MappingParameters, EachIndexGetsItsValuesFirstParameterSlowest) {
  auto r = translate_train(kSweep);
  auto exports = lines_starting_with(r.script, "    export ");
  EXPECT_EQ(exports, (Options{"    export LR='0.1' EPOCHS='1'", "    export LR='0.1' EPOCHS='2'",
                              "    export LR='0.1' EPOCHS='3'", "    export LR='0.01' EPOCHS='1'",
                              "    export LR='0.01' EPOCHS='2'",
                              "    export LR='0.01' EPOCHS='3'"}));
  auto runs = lines_starting_with(r.script, "    RISEML_RUN_1=");
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[0], "    RISEML_RUN_1='python train.py --lr 0.1 --epochs 1'");
  EXPECT_EQ(runs[5], "    RISEML_RUN_1='python train.py --lr 0.01 --epochs 3'");
  ASSERT_EQ(r.sruns.size(), 1u);
  EXPECT_TRUE(r.sruns[0].ends_with(" bash -c \"${RISEML_RUN_1}\"")) << r.sruns[0];
}

TEST(MappingParameters, CaseStatementCoversEveryIndexAndRefusesOthers) {
  auto r = translate_train(kSweep);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(has_line(r.script, "  " + std::to_string(i) + ")"));
  EXPECT_FALSE(has_line(r.script, "  6)"));
  EXPECT_TRUE(has_line(r.script, "  *)"));
}

TEST(MappingParameters, NamesAreExportedUpperCased) {
  auto r = translate_train(R"(  resources: {cpus: 1}
  parameters:
    lr-decay: [1e-6, 1e-7]
    drop.out: 0.5
    num_layers: 4
  run: python train.py {{lr-decay}} {{drop.out}} {{num_layers}}
)");
  EXPECT_TRUE(has_line(r.script, "    export LR_DECAY='1e-6' DROP_OUT='0.5' NUM_LAYERS='4'"))
      << r.script;
}

TEST(MappingParameters, ValuesAreUsedAsWritten) {
  auto r = translate_train(R"(  resources: {cpus: 1}
  parameters:
    lr: [1e-6, 0.10, .5]
  run: python train.py {{lr}}
)");
  auto exports = lines_starting_with(r.script, "    export ");
  EXPECT_EQ(exports, (Options{"    export LR='1e-6'", "    export LR='0.10'", "    export LR='.5'"}));
}

TEST(MappingParameters, ConcurrencyAtLeastTheCombinationsDropsTheThrottle) {
  for (const char* c : {"6", "7", "100"}) {
    std::string train = kSweep;
    train.replace(train.find("concurrency: 2"), 14, std::string("concurrency: ") + c);
    auto r = translate_train(train);
    EXPECT_EQ(with_prefix(r.options, "--array="), Options{"--array=0-5"}) << c;
  }
}

TEST(MappingParameters, NoConcurrencyMeansNoThrottle) {
  std::string train = kSweep;
  train.erase(train.find("  concurrency: 2\n"), 17);
  auto r = translate_train(train);
  EXPECT_EQ(with_prefix(r.options, "--array="), Options{"--array=0-5"});
}

TEST(MappingParameters, OneCombinationIsNoArray) {
  auto r = translate_train(R"(  resources: {cpus: 1}
  parameters:
    lr: 0.1
  run: python train.py --lr {{lr}}
)");
  EXPECT_TRUE(with_prefix(r.options, "--array").empty());
  EXPECT_TRUE(has_line(r.script, "export LR='0.1'")) << r.script;
  EXPECT_TRUE(has_line(r.script, "RISEML_RUN_1='python train.py --lr 0.1'")) << r.script;
  EXPECT_TRUE(has_line(r.script, "export EXPERIMENT_ID=\"${SLURM_JOB_ID}\""));
}

TEST(MappingParameters, PlaceholdersInInstallLinesAreFilledInToo) {
  auto r = translate_train(R"(  resources: {cpus: 1}
  parameters:
    v: ['1.0', '2.0']
  install: pip install lib=={{v}}
  run: python train.py
)");
  EXPECT_TRUE(has_line(r.script, "    RISEML_INSTALL_1='pip install lib==2.0'")) << r.script;
}

TEST(MappingParameters, ValuesWithQuotesStayOneWord) {
  auto r = translate_train(R"(  resources: {cpus: 1}
  parameters:
    name: ["it's", 'a "b"']
  run: echo {{name}}
)");
  EXPECT_TRUE(has_line(r.script, "    export NAME='it'\\''s'")) << r.script;
  EXPECT_TRUE(has_line(r.script, "    RISEML_RUN_1='echo it'\\''s'")) << r.script;
}

// ---- images, frameworks, the site

TEST(MappingImage, RegistryImagesBecomeEnrootForm) {
  EXPECT_EQ(pyxis_image_name("gcr.io/x/y:t"), "gcr.io#x/y:t");
  EXPECT_EQ(pyxis_image_name("localhost:5000/a/b"), "localhost:5000#a/b");
  EXPECT_EQ(pyxis_image_name("localhost/a"), "localhost#a");
  EXPECT_EQ(pyxis_image_name("nvcr.io#nvidia/pytorch:24.01-py3"), "nvcr.io#nvidia/pytorch:24.01-py3");
  EXPECT_EQ(pyxis_image_name("pytorch/pytorch:2.1"), "pytorch/pytorch:2.1") << "Docker Hub";
  EXPECT_EQ(pyxis_image_name("ubuntu:16.04"), "ubuntu:16.04");
}

TEST(MappingImage, ImageIsPassedToEveryStep) {
  auto r = translate_train("  image: gcr.io/x/y:t\n  resources: {cpus: 1}\n  install: i\n  run: x\n");
  EXPECT_TRUE(contains(r.script, "--container-image='gcr.io#x/y:t'")) << r.script;
  EXPECT_TRUE(contains(r.script, "--container-name=riseml"));
  EXPECT_TRUE(contains(r.script, "${OUTPUT_DIR}:/output")) << "RiseML's /output";
  ASSERT_EQ(r.sruns.size(), 2u);
  for (const auto& line : r.sruns)
    EXPECT_TRUE(contains(line, "\"${riseml_container[@]}\"") || contains(line, "--container-image"))
        << line;
}

SiteConfig framework_site() {
  SiteConfig site;
  site.path = "test-site.yml";
  site.frameworks["tensorflow"]["1.5.0"] = {.image = "tensorflow/tensorflow:1.5.0",
                                            .gpu_image = "tensorflow/tensorflow:1.5.0-gpu",
                                            .modules = {},
                                            .venv = std::nullopt};
  site.frameworks["tensorflow"]["default"] = {.image = std::nullopt,
                                              .gpu_image = std::nullopt,
                                              .modules = {"cuda", "tensorflow"},
                                              .venv = "/opt/tf"};
  return site;
}

TEST(MappingFramework, VersionPicksTheSiteImageGpuOrNot) {
  auto gpu = translate_train("  framework: tensorflow\n  tensorflow: {version: 1.5.0}\n"
                             "  resources: {gpus: 1}\n  run: x\n",
                             "", framework_site());
  EXPECT_TRUE(contains(gpu.script, "--container-image='tensorflow/tensorflow:1.5.0-gpu'"))
      << gpu.script;
  auto cpu = translate_train("  framework: tensorflow\n  tensorflow: {version: 1.5.0}\n"
                             "  resources: {gpus: 0}\n  run: x\n",
                             "", framework_site());
  EXPECT_TRUE(contains(cpu.script, "--container-image='tensorflow/tensorflow:1.5.0'"))
      << cpu.script;
}

TEST(MappingFramework, OtherVersionsUseTheDefaultModulesAndVenv) {
  auto r = translate_train("  framework: tensorflow\n  tensorflow: {version: 1.9.0}\n"
                           "  resources: {cpus: 1}\n  run: x\n",
                           "", framework_site());
  EXPECT_TRUE(has_line(r.script, "module load cuda tensorflow")) << r.script;
  EXPECT_TRUE(has_line(r.script, "source '/opt/tf/bin/activate'")) << r.script;
  EXPECT_EQ(lines_of(r.script).front(), "#!/bin/bash -l");
  EXPECT_FALSE(contains(r.script, "--container-image"));
}

TEST(MappingFramework, WithoutASiteFileACommentAndAWarning) {
  auto r = translate_train("  framework: tensorflow\n  tensorflow: {version: 1.5.0}\n"
                           "  resources: {cpus: 1}\n  run: x\n");
  EXPECT_TRUE(contains(r.script, "# Note: framework tensorflow 1.5.0: no site file, so the job "
                                 "runs in the submitting environment."))
      << r.script;
  EXPECT_TRUE(contains(r.diagnostics, "riseml.yml:3:14: warning: train.framework: no site file"))
      << r.diagnostics;
  EXPECT_FALSE(contains(r.script, "--container-image"));
}

TEST(MappingFramework, AnExplicitImageWinsOverTheVersionWithAWarning) {
  auto r = translate_train("  framework: tensorflow\n  tensorflow: {version: 1.5.0}\n"
                           "  image: pytorch/pytorch\n  resources: {cpus: 1}\n  run: x\n",
                           "", framework_site());
  EXPECT_TRUE(contains(r.script, "--container-image='pytorch/pytorch'")) << r.script;
  EXPECT_TRUE(contains(r.diagnostics, "warning: train.tensorflow.version: ignored: the image"))
      << r.diagnostics;
}

// ---- the slurm: section

TEST(MappingSlurm, EveryKeyBecomesAnSbatchLine) {
  auto r = translate_train("  resources: {cpus: 1}\n  run: x\n", R"(slurm:
  partition: gpu
  account: proj1
  qos: high
  reservation: maint
  time: '1-12:00:00'
  constraint: a100
  signal: B:USR1@120
  dependency: afterok:1234
  mail: {type: 'END,FAIL', user: me@example.org}
  exclusive: true
  requeue: false
  output: logs/%x-%j.out
  error: logs/%x-%j.err
  extra: [--licenses=fs:1, --comment=hello]
)");
  for (const char* o :
       {"--partition=gpu", "--account=proj1", "--qos=high", "--reservation=maint",
        "--time=1-12:00:00", "--constraint=a100", "--signal=B:USR1@120",
        "--dependency=afterok:1234", "--mail-type=END,FAIL", "--mail-user=me@example.org",
        "--exclusive", "--no-requeue", "--output=logs/%x-%j.out", "--error=logs/%x-%j.err",
        "--licenses=fs:1", "--comment=hello"}) {
    EXPECT_TRUE(has(r.options, o)) << o << "\n" << r.script;
  }
  EXPECT_EQ(with_prefix(r.options, "--output="), Options{"--output=logs/%x-%j.out"});
}

TEST(MappingSlurm, ModulesAndEnvironment) {
  auto r = translate_train("  resources: {cpus: 1}\n  run: x\n",
                           "slurm:\n  modules: [cuda/12.2, nccl]\n"
                           "  environment: {NCCL_DEBUG: INFO, MSG: \"it's\"}\n");
  EXPECT_TRUE(has_line(r.script, "module load cuda/12.2 nccl")) << r.script;
  EXPECT_TRUE(has_line(r.script, "export NCCL_DEBUG='INFO'"));
  EXPECT_TRUE(has_line(r.script, "export MSG='it'\\''s'"));
  EXPECT_EQ(lines_of(r.script).front(), "#!/bin/bash -l");
}

TEST(MappingSlurm, SiteDefaultsApplyAndTheJobWins) {
  Diagnostics diags;
  auto parsed = parse_site_config_text("defaults: {partition: cpu, time: '1:00:00'}\n",
                                       "site.yml", diags);
  ASSERT_TRUE(parsed) << diags.format();
  const SiteConfig site = *parsed;
  auto r = translate_train("  resources: {cpus: 1}\n  run: x\n", "slurm: {partition: gpu}\n", site);
  EXPECT_EQ(with_prefix(r.options, "--partition="), Options{"--partition=gpu"});
  EXPECT_EQ(with_prefix(r.options, "--time="), Options{"--time=1:00:00"});
}

TEST(MappingSlurm, TimeInSexagesimalFormStaysText) {
  auto r = translate_train("  resources: {cpus: 1}\n  run: x\n", "slurm: {time: 1:30}\n");
  EXPECT_TRUE(has(r.options, "--time=1:30")) << r.script;
}

TEST(MappingSlurm, SignalsSbatchTakesAreWrittenAndTheOthersRefused) {
  // As sbatch 22.05 on the testbed took them (--test-only) or refused them.
  for (const char* spec : {"usr1@60", "SIGTERM", "R:USR2@0", "BR:xcpu@65535", "10@300", "65535"}) {
    auto r = translate_train("  resources: {cpus: 1}\n  run: x\n", std::string("slurm: {signal: '") + spec + "'}\n");
    EXPECT_TRUE(has(r.options, std::string("--signal=") + spec)) << spec << "\n" << r.script;
  }
  for (const char* spec : {"PIPE@60", "USR1@65536", "0@60", "65536", "USR99", "SIG", "R:B:USR1", "USR1@-1", "@60",
                           "X:USR1", "USR1@"}) {
    Translation t = translate_text(std::string("project: p\ntrain:\n  run: x\nslurm: {signal: '") + spec + "'}\n",
                                   "riseml.yml", SiteConfig{});
    EXPECT_FALSE(t.script.has_value()) << spec;
    EXPECT_NE(t.diagnostics.format().find("riseml.yml:4:17: error: slurm.signal: '" + std::string(spec) +
                                          "' is not a Slurm signal spec"),
              std::string::npos)
        << spec << "\n" << t.diagnostics.format();
  }
}

TEST(MappingSlurm, AnExtraEntryWhoseNameIsNotAnOptionIsRefused) {
  // '--x"y --time=2': the quote would open a section sbatch reads to the end of the line.
  for (const char* entry : {"--x\\\"y --time=2", "--a#b", "-", "--c''d=1"}) {
    Translation t = translate_text(std::string("project: p\ntrain:\n  run: x\nslurm: {extra: ['") + entry + "']}\n",
                                   "riseml.yml", SiteConfig{});
    EXPECT_FALSE(t.script.has_value()) << entry;
    EXPECT_NE(t.diagnostics.format().find("is not an sbatch option"), std::string::npos)
        << entry << "\n" << t.diagnostics.format();
  }
}

TEST(MappingSlurm, MailTypesInAnyCaseAsSbatchTakesThem) {
  auto r = translate_train("  resources: {cpus: 1}\n  run: x\n", "slurm: {mail: {type: 'all,time_limit_90'}}\n");
  EXPECT_TRUE(has(r.options, "--mail-type=all,time_limit_90")) << r.script;
}

TEST(MappingSlurm, ValuesWithBlanksQuotesAndHashesAreOneSbatchArgument) {
  // `error: "x --time=1"` written bare set the job's time limit to a minute on the testbed.
  auto r = translate_train("  resources: {cpus: 1}\n  run: x\n", R"(slurm:
  output: "my logs/a#b \"q\" \\ 'c'.out"
  error: "x --time=1"
  mail: {type: END, user: "me@example.org --partition=other"}
  extra: ["--comment=hello --time=2 # no comment", "--begin now+1hour", --hold, '--licenses="fs:1"']
)");
  std::vector<std::vector<std::string>> parsed;
  for (const auto& o : r.options) parsed.push_back(sbatch_directive_arguments(o));
  auto has_args = [&](const std::vector<std::string>& want) {
    return std::find(parsed.begin(), parsed.end(), want) != parsed.end();
  };
  EXPECT_TRUE(has_args({"--output=my logs/a#b \"q\" \\ 'c'.out"})) << r.script;
  EXPECT_TRUE(has_args({"--error=x --time=1"})) << r.script;
  EXPECT_TRUE(has_args({"--mail-user=me@example.org --partition=other"})) << r.script;
  EXPECT_TRUE(has_args({"--comment=hello --time=2 # no comment"})) << r.script;
  EXPECT_TRUE(has_args({"--begin", "now+1hour"})) << r.script;
  EXPECT_TRUE(has_args({"--hold"})) << r.script;
  EXPECT_TRUE(has(r.options, "--licenses=\"fs:1\"")) << r.script;  // one argument as written: kept
  EXPECT_TRUE(has(r.options, "--job-name=p")) << r.script;          // plain values stay bare
  for (const auto& args : parsed)
    for (const auto& a : args)
      EXPECT_FALSE(a.rfind("--time", 0) == 0 || a.rfind("--partition", 0) == 0) << a << "\n" << r.script;
}

// ---- what the script exports

TEST(MappingExports, ProjectExperimentAndOutputDir) {
  auto r = translate_train("  resources: {cpus: 1}\n  run: x\n");
  EXPECT_TRUE(has(r.options, "--job-name=p"));
  EXPECT_TRUE(has_line(r.script, "export RISEML_PROJECT='p'"));
  EXPECT_TRUE(has_line(r.script, "export EXPERIMENT_ID=\"${SLURM_JOB_ID}\""));
  EXPECT_TRUE(has_line(r.script,
                       "export OUTPUT_DIR=\"${RISEML_OUTPUT_ROOT:-${SLURM_SUBMIT_DIR}/riseml-output}"
                       "/${RISEML_PROJECT}/${EXPERIMENT_ID}\""));
  EXPECT_TRUE(has_line(r.script, "mkdir -p \"${OUTPUT_DIR}\""));
  EXPECT_LT(r.script.find("mkdir -p"), r.script.find("\nsrun ")) << "created before any step";
  EXPECT_TRUE(has_line(r.script, "set -euo pipefail"));
}

TEST(MappingExports, TensorboardDefaultsOnForTensorflow) {
  auto on = translate_train("  framework: tensorflow\n  resources: {cpus: 1}\n  run: x\n");
  EXPECT_TRUE(contains(on.script, "tensorboard --logdir ${OUTPUT_DIR}"));
  auto off = translate_train("  tensorflow: {tensorboard: false}\n  resources: {cpus: 1}\n"
                             "  run: x\n");
  EXPECT_FALSE(contains(off.script, "tensorboard --logdir"));
  auto none = translate_train("  resources: {cpus: 1}\n  run: x\n");
  EXPECT_FALSE(contains(none.script, "tensorboard --logdir"));
}

// ---- the layout on its own (job_layout.hpp)

TEST(MappingLayout, SweepLargerThanTheSiteArrayLimitIsAnError) {
  Diagnostics diags;
  JobFile job;
  job.project = "p";
  job.train.parameters = {{"a", {"1", "2", "3"}, {"f", 5, 5}}, {"b", {"1", "2"}, {"f", 6, 5}}};
  SiteConfig site;
  site.max_array_size = 5;
  EXPECT_FALSE(plan_layout(job, site, diags));
  EXPECT_EQ(diags.format(),
            "f:5:5: error: train.parameters: the sweep has 6 combinations; this cluster runs at "
            "most 5 per job array (MaxArraySize): sweep fewer values\n");
  site.max_array_size = 6;
  Diagnostics ok;
  auto layout = plan_layout(job, site, ok);
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->array_size, 6u);
}

// ---- torch.distributed

TEST(MappingTorchDistributed, WorkersTakeHorovodsLayoutAndTheBackendIsExported) {
  auto r = translate_train(R"(  torch_distributed: {workers: {count: 2, processes: 2}, backend: gloo}
  resources: {cpus: 4, mem: 1024}
  run: python3 train.py
)");
  EXPECT_EQ(with_prefix(r.options, "--nodes="), Options{"--nodes=2"});
  EXPECT_EQ(with_prefix(r.options, "--ntasks-per-node="), Options{"--ntasks-per-node=2"});
  EXPECT_EQ(with_prefix(r.options, "--cpus-per-task="), Options{"--cpus-per-task=2"});
  ASSERT_EQ(r.sruns.size(), 1u);
  EXPECT_TRUE(contains(r.sruns[0], "--mpi=pmix")) << r.sruns[0];
  EXPECT_TRUE(contains(r.script, "export RISEML_TORCH_BACKEND='gloo'\n")) << r.script;
  EXPECT_TRUE(contains(r.script, "torch.distributed (backend gloo), 2 node(s) x 2 process(es)"));
}

TEST(MappingTorchDistributed, TheBackendDefaultsToRiseml) {
  auto r = translate_train(R"(  torch_distributed: {workers: 3}
  run: python3 train.py
)");
  EXPECT_EQ(with_prefix(r.options, "--nodes="), Options{"--nodes=3"});
  EXPECT_TRUE(contains(r.script, "export RISEML_TORCH_BACKEND='riseml'\n")) << r.script;
}

TEST(MappingTorchDistributed, MistakesAreNamedWithTheirFix) {
  for (const auto& [body, says] : std::vector<std::pair<std::string, std::string>>{
           {"  torch_distributed: {workers: 2, backend: mpi}\n", "use riseml, gloo or nccl"},
           {"  torch_distributed: {workers: 2, backnd: gloo}\n", "backnd"},
           {"  torch_distributed: {workers: 0}\n", "workers"},
           {"  torch_distributed: [2]\n", "torch_distributed: {workers: 2}"},
           {"  torch_distributed: {workers: 2}\n  horovod: {workers: 2}\n", "cannot be combined"}}) {
    Translation t = translate_text("project: p\ntrain:\n" + body + "  run: python3 t.py\n",
                                   "riseml.yml", SiteConfig{});
    EXPECT_FALSE(t.script.has_value()) << body;
    EXPECT_TRUE(contains(t.diagnostics.format(), says)) << body << t.diagnostics.format();
    EXPECT_TRUE(contains(t.diagnostics.format(), "train.")) << t.diagnostics.format();
  }
}

}  // namespace
}  // namespace riseml::test
