// The workload files riseml-replay reads: the shipped models parse with the sizes torchvision
// gives them, and every malformed file fails with its line and what to fix, never a crash.
#include <gtest/gtest.h>

#include <string>

#include <riseml/model/workload.hpp>

namespace riseml::model {
namespace {

const std::string kDir = RISEML_WORKLOADS_SOURCE_DIR;

TEST(Workload, ShippedModelsParseWithTheirParameterCounts) {
  // torchvision's parameter counts (requires_grad parameters) and tensor counts.
  struct Model {
    const char* name;
    std::size_t elements, tensors;
  } models[] = {{"resnet50", 25557032, 161},
                {"resnet101", 44549160, 314},
                {"inception_v3", 27161264, 292},
                {"vgg16", 138357544, 32}};
  for (const auto& m : models) {
    SCOPED_TRACE(m.name);
    const Workload w = read_workload(kDir + "/" + m.name + ".workload");
    EXPECT_EQ(w.model, m.name);
    EXPECT_EQ(w.elements(), m.elements);
    EXPECT_EQ(w.gradients.size(), m.tensors);
    EXPECT_EQ(w.batch, 64);
    // The compute adds up to the cited step time (forward a third of it).
    EXPECT_NEAR(w.compute_ms(), w.step_ms, 0.01 * w.step_ms);
    EXPECT_NEAR(w.forward_ms, w.step_ms / 3, 0.1);
    EXPECT_NE(w.source.find("P100"), std::string::npos);
  }
}

TEST(Workload, BackwardOrderStartsAtTheClassifier) {
  EXPECT_EQ(read_workload(kDir + "/resnet50.workload").gradients.front().name, "fc.weight");
  EXPECT_EQ(read_workload(kDir + "/vgg16.workload").gradients.front().name, "classifier.6.weight");
  EXPECT_EQ(read_workload(kDir + "/vgg16.workload").gradients.back().name, "features.0.bias");
}

TEST(Workload, AMinimalFile) {
  const Workload w = parse_workload(
      "# comment\n\nriseml-workload 1\nmodel tiny  # trailing comment\nstep_ms 3\nforward_ms 1\n"
      "grad 500 b 4\ngrad 0 w 2x3\ntail_us 1500\n",
      "tiny.workload");
  ASSERT_EQ(w.gradients.size(), 2u);
  EXPECT_EQ(w.gradients[1].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(w.elements(), 10u);
  EXPECT_DOUBLE_EQ(w.compute_ms(), 3.0);
  EXPECT_EQ(w.batch, 1);
}

struct Broken {
  const char* text;
  const char* message;  // part of the error, after "broken.workload:LINE: "
  int line;
};

class BrokenWorkload : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenWorkload, FailsNamingTheLine) {
  const Broken& b = GetParam();
  try {
    parse_workload(b.text, "broken.workload");
    FAIL() << "accepted: " << b.text;
  } catch (const WorkloadError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("broken.workload:" + std::to_string(b.line) + ": "), std::string::npos) << what;
    EXPECT_NE(what.find(b.message), std::string::npos) << what;
  }
}

const std::string kHead = "riseml-workload 1\nmodel m\n";

INSTANTIATE_TEST_SUITE_P(
    Workload, BrokenWorkload,
    ::testing::Values(
        Broken{"", "no 'riseml-workload 1'", 0},
        Broken{"model m\n", "want 'riseml-workload 1'", 1},
        Broken{"riseml-workload 2\n", "want 'riseml-workload 1'", 1},
        Broken{"riseml-workload 1\ngrad 1 a 4\n", "no 'model NAME'", 2},
        Broken{"riseml-workload 1\nmodel m\n", "no 'grad' lines", 2},
        Broken{"riseml-workload 1\nmodel m\nstep_ms fast\n", "step_ms 'fast'", 3},
        Broken{"riseml-workload 1\nmodel m\nstep_ms -1\n", "want a number from 0", 3},
        Broken{"riseml-workload 1\nmodel m\nstep_ms nan\n", "want a number", 3},
        Broken{"riseml-workload 1\nmodel m\nstep_ms 1e400\n", "want a number", 3},
        Broken{"riseml-workload 1\nmodel m\nstep_ms 1 2\n", "step_ms: want", 3},
        Broken{"riseml-workload 1\nmodel m\nbatch 1.5\n", "whole number", 3},
        Broken{"riseml-workload 1\nmodel m\nbatch 0\n", "whole number", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a\n", "grad: want 'grad COMPUTE_US NAME SHAPE'", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a 0\n", "a dimension is 0", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a 4x\n", "shape '4x'", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a x4\n", "shape 'x4'", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a 4xx4\n", "shape '4xx4'", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a -4\n", "shape '-4'", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a 99999999999999999999\n", "shape", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a 65536x65536x65536\n", "more than 2^34", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a 1x1x1x1x1x1x1x1x1\n", "1 to 8 dimensions", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 1 a 4\ngrad 2 a 4\n", "'a' listed twice", 4},
        Broken{"riseml-workload 1\nmodel m\ngrad x a 4\n", "grad compute 'x'", 3},
        Broken{"riseml-workload 1\nmodel m\nsteps 4\n", "unknown key 'steps'", 3},
        Broken{"riseml-workload 1\nmodel m\ngrad 3600000000 a 4\ngrad 3600000000 b 4\n",
               "more than an hour", 4}));

TEST(Workload, AMissingFileSaysWhereTheModelsAre) {
  try {
    read_workload("/nonexistent/x.workload");
    FAIL();
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("model/workloads"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace riseml::model
