# lit configuration of the clang-tidy plugin tests (test/tidy/*.test).
import os
import lit.formats

config.name = "amp-migrate-tidy"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
root = config.amp_source_root
config.test_source_root = os.path.join(root, "test", "tidy")
config.test_exec_root = os.path.join(config.amp_binary_dir, "lit-out")
config.excludes = ["Inputs"]
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
mock = os.path.join(root, "test", "Inputs", "mock-torch")
# %clang-tidy-amp: clang-tidy with the plugin loaded and only the amp-* checks on.
config.substitutions.append(("%clang-tidy-amp", "%s -load=%s '-checks=-*,amp-*'" % (config.clang_tidy, config.amp_tidy_plugin)))
config.substitutions.append(("%clang-tidy", config.clang_tidy))
config.substitutions.append(("%plugin", config.amp_tidy_plugin))
config.substitutions.append(("%amp-migrate", config.amp_migrate))
config.substitutions.append(("%mock", mock))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%compare_findings", "%s %s" % (config.python, os.path.join(root, "test", "tidy", "Inputs", "compare_findings.py"))))
if config.clang_apply_replacements and not config.clang_apply_replacements.endswith("-NOTFOUND"):
    config.available_features.add("clang-apply-replacements")
    config.substitutions.append(("%clang-apply-replacements", config.clang_apply_replacements))
# The clang-tidy-amp wrapper of the build tree (clang-tidy with -load), as an IDE would run it.
config.substitutions.append(("%wrapper", os.path.join(os.path.dirname(config.amp_tidy_plugin), "clang-tidy-amp")))
