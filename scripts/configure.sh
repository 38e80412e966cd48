# Configures and builds into build/ (sourced by demo.sh and test.sh); AMP_CONFIGURE_ONLY=1 only
# configures (demo.sh then builds just the targets it needs).
# Paths under the checkout are hashed relative to it, so another clone (CI's) reuses the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
AMP_DEPS=${AMP_DEPS:-/opt/amp-deps}
AMP_TORCH_WHEEL_VERSION=${AMP_TORCH_WHEEL_VERSION:-2.11.0}
torch2="$AMP_DEPS/torch-$AMP_TORCH_WHEEL_VERSION/torch"
cmake_args=(-S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release)
[[ ${CI:-} == true ]] && cmake_args+=(-DAMP_WERROR=ON)
# AMP_SANITIZE_TOOL=address,undefined builds the tool (engine, CLI, plugin, unit tests) with ASan
# and UBSan, so that every unit, lit, tidy, LSP and e2e test runs it under the sanitizers
# (docs/reliability.md). CI (.ci/run) sets it; scripts/test.sh alone builds without.
cmake_args+=("-DAMP_SANITIZE_TOOL=${AMP_SANITIZE_TOOL-}")
[[ -d $torch2/share/cmake/Torch ]] && cmake_args+=("-DAMP_TORCH2_ROOT=$torch2")
cmake "${cmake_args[@]}" >/dev/null
[[ ${AMP_CONFIGURE_ONLY:-} == 1 ]] || cmake --build build -j"${AMP_JOBS:-2}"
