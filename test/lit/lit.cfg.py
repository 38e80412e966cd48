# lit configuration for the tool's tests: per-check tests, golden rewrites, command-line tests.
import os
import lit.formats

config.name = "amp-migrate"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".cpp", ".test"]
root = config.amp_source_root
config.test_source_root = os.path.join(root, "test")
config.test_exec_root = os.path.join(os.path.dirname(config.amp_migrate), "..", "..", "test", "lit-out")
config.excludes = ["Inputs", "lit", "unit", "runtime", "torch", "e2e", "golden-data", "tidy", "lsp", "fuzz", "differential"]
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
mock = os.path.join(root, "test", "Inputs", "mock-torch")
config.substitutions.append(("%amp-migrate", config.amp_migrate))
config.substitutions.append(("%mock", mock))
config.substitutions.append(("%check_amp", "%s %s %s %s" % (config.python, os.path.join(root, "test", "lit", "check_amp.py"), config.amp_migrate, mock)))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%amp_torch_include", os.path.join(root, "runtime", "torch", "include")))
config.substitutions.append(("%amp_runtime_include", os.path.join(root, "runtime", "include")))
config.substitutions.append(("%inputs", os.path.join(root, "test", "Inputs")))
if config.torch_include:
    config.available_features.add("libtorch")
    config.substitutions.append(("%torch_include", config.torch_include))
# clang-apply-replacements reads the merged exported fixes (test/cli/merge-fixes.test).
import shutil
if shutil.which("clang-apply-replacements", path=config.environment["PATH"]):
    config.available_features.add("clang-apply-replacements")
# Per-check tests over real headers: %check_amp_real parses without the mock headers.
config.substitutions.insert(0, ("%check_amp_real", "%s %s %s -" % (config.python, os.path.join(root, "test", "lit", "check_amp.py"), config.amp_migrate)))
# PyPI's libtorch 2.x headers (the 2.4+ API), for the tests that need them (REQUIRES: libtorch2).
if getattr(config, "torch2_include", ""):
    config.available_features.add("libtorch2")
    config.substitutions.append(("%torch2_include", config.torch2_include))
    config.substitutions.append(("%torch2_flags", "-isystem %s -isystem %s" % (
        config.torch2_include, os.path.join(config.torch2_include, "torch", "csrc", "api", "include"))))
if hasattr(os, "geteuid") and os.geteuid() == 0:
    config.available_features.add("root")
# A private mount namespace (unshare -m, as root) for the read-only file system test.
import subprocess
if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("unshare"):
    if subprocess.call(["unshare", "-m", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
        config.available_features.add("mount-namespaces")
if os.path.exists("/dev/full"):
    config.available_features.add("dev-full")
