// A few real examples translated with the test site files in tests/translator/sites/:
// pyxis-frameworks.yml maps TensorFlow versions to images; modules-venv-no-containers.yml
// provides them as modules or a venv, runs no containers and has no SPANK plugin (bind: off).
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace riseml::test {
namespace {

struct SiteTranslation {
  std::string script;
  std::string diagnostics;
};

SiteTranslation translate_example(const std::string& example, const std::string& site_name) {
  const fs::path file = examples_dir() / example;
  if (!fs::exists(file)) {
    ADD_FAILURE() << file << " is missing (see GoldenExamples.ExamplesFolderIsPresent)";
    return {};
  }
  Translation t = translate_text(read_file(file), example, test_site(site_name));
  EXPECT_TRUE(t.script.has_value()) << t.diagnostics.format();
  SiteTranslation out{t.script.value_or(""), t.diagnostics.format()};
  EXPECT_EQ(bash_syntax_errors(out.script), "");
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every srun line runs in the container (the image options are passed on every step).
void expect_every_step_in_container(const std::string& script) {
  ASSERT_FALSE(srun_lines(script).empty());
  for (const auto& line : srun_lines(script)) {
    EXPECT_TRUE(contains(line, "\"${riseml_container[@]}\"") || contains(line, "--container-image="))
        << line;
  }
}

const char* kPyxis = "pyxis-frameworks.yml";
const char* kModules = "modules-venv-no-containers.yml";

TEST(SitePyxis, VersionWithGpusPicksTheGpuImage) {
  auto t = translate_example("examples_cifar10.yml", kPyxis);  // tensorflow 1.5.0, gpus 1
  EXPECT_TRUE(contains(t.script, "--container-image='tensorflow/tensorflow:1.5.0-gpu'"))
      << t.script;
  expect_every_step_in_container(t.script);
  EXPECT_EQ(t.diagnostics, "") << "a site that provides the framework needs no warning";
}

TEST(SitePyxis, NoVersionWithoutGpusPicksTheDefaultCpuImage) {
  auto t = translate_example("examples_census.yml", kPyxis);  // no version, gpus 0
  EXPECT_TRUE(contains(t.script, "--container-image='tensorflow/tensorflow:latest'")) << t.script;
  EXPECT_FALSE(contains(t.script, "latest-gpu"));
}

TEST(SitePyxis, ExplicitRegistryImageWinsInEnrootForm) {
  auto t = translate_example("thirdparty_aqqu.yml", kPyxis);  // image: gcr.io/...; framework too
  EXPECT_TRUE(contains(t.script, "--container-image='gcr.io#tensorflow/tensorflow:1.5.0-gpu-py3'"))
      << t.script;
  EXPECT_FALSE(contains(t.script, "tensorflow/tensorflow:latest"));
  expect_every_step_in_container(t.script);
}

TEST(SitePyxis, HorovodStepsRunInTheImageWithBinding) {
  auto t = translate_example("docs_horovod.yml", kPyxis);
  auto runs = srun_lines(t.script);
  ASSERT_EQ(runs.size(), 1u) << t.script;
  EXPECT_TRUE(contains(runs[0], "--mpi=pmix")) << runs[0];
  EXPECT_TRUE(contains(runs[0], "--riseml-bind=auto")) << runs[0];
  EXPECT_TRUE(contains(t.script, "--container-image='tensorflow/tensorflow:1.5.0-gpu'"));
}

TEST(SiteModules, VersionLoadsItsModulesInALoginShell) {
  auto t = translate_example("examples_cifar10.yml", kModules);
  EXPECT_EQ(lines_of(t.script).front(), "#!/bin/bash -l") << "module needs a login shell";
  EXPECT_TRUE(has_line(t.script, "module load cuda/9.0 tensorflow/1.5.0")) << t.script;
  EXPECT_FALSE(contains(t.script, "--container-image"));
  EXPECT_EQ(t.diagnostics, "");
}

TEST(SiteModules, UnlistedVersionFallsBackToDefault) {
  auto t = translate_example("examples_census.yml", kModules);  // no version
  EXPECT_TRUE(has_line(t.script, "module load tensorflow")) << t.script;
}

TEST(SiteModules, VenvIsActivated) {
  auto t = translate_example("docs_guide_custom_images.yml", kModules);  // version 1.2.1
  EXPECT_TRUE(has_line(t.script, "source '/opt/venvs/tensorflow-1.2.1/bin/activate'")) << t.script;
  EXPECT_TRUE(t.script.find("source ") < t.script.find("\nsrun ")) << "activate before any step";
}

TEST(SiteModules, BindOffLeavesOutTheBindOption) {
  for (const char* example : {"examples_cifar10.yml", "docs_horovod.yml", "examples_census_dist.yml"}) {
    auto t = translate_example(example, kModules);
    ASSERT_FALSE(srun_lines(t.script).empty()) << example;
    for (const auto& line : srun_lines(t.script))
      EXPECT_FALSE(contains(line, "--riseml-bind")) << example << ": " << line;
  }
}

TEST(SiteModules, ImageIsNotUsedWithoutContainersAndAWarningSaysSo) {
  auto t = translate_example("thirdparty_aqqu.yml", kModules);
  EXPECT_FALSE(contains(t.script, "--container-image")) << t.script;
  EXPECT_TRUE(contains(t.diagnostics, "warning: train.image: this cluster runs no containers"))
      << t.diagnostics;
}

TEST(SiteModules, OutputRootComesFromTheSite) {
  auto t = translate_example("examples_census.yml", kModules);
  EXPECT_TRUE(has_line(t.script,
                       "export OUTPUT_DIR=\"${RISEML_OUTPUT_ROOT:-/scratch/riseml}/${RISEML_PROJECT}"
                       "/${EXPERIMENT_ID}\""))
      << t.script;
}

TEST(SiteFiles, UnknownFrameworkIsAnErrorNamingWhatTheSiteHas) {
  Translation t = translate_text("project: p\ntrain:\n  framework: pytorch\n  run: python x.py\n"
                                 "  resources: {cpus: 1}\n",
                                 "riseml.yml", test_site(kPyxis));
  EXPECT_FALSE(t.script.has_value());
  const std::string d = t.diagnostics.format();
  EXPECT_TRUE(contains(d, "riseml.yml:3:14: error: train.framework: this cluster provides no "
                          "framework 'pytorch'"))
      << d;
  EXPECT_TRUE(contains(d, "lists: tensorflow")) << d;
}

}  // namespace
}  // namespace riseml::test
