# Finds LLVM/Clang 19 (Debian's packages) and defines amp_llvm_target() for engine and tool targets.
find_package(LLVM REQUIRED CONFIG PATHS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
find_package(Clang REQUIRED CONFIG PATHS /usr/lib/llvm-19/lib/cmake/clang NO_DEFAULT_PATH)
set(AMP_CLANG_RESOURCE_DIR "${LLVM_LIBRARY_DIR}/clang/${LLVM_VERSION_MAJOR}" CACHE PATH
    "clang's resource directory (builtin headers) used by the tool")
set(AMP_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}" CACHE PATH "FileCheck, not, split-file")

# AMP_SANITIZE_TOOL (CI: address,undefined): the tool's own code, its plugin and its unit tests
# built with sanitizers, against Debian's uninstrumented LLVM, at -O1 (faster to build than -O3,
# fast enough to run every lit test). Every report is fatal. The plugin then needs the ASan
# runtime in the uninstrumented clang-tidy that loads it: AMP_TOOL_SANITIZER_PRELOAD is that
# runtime, which the plugin's wrappers put in LD_PRELOAD.
if(AMP_SANITIZE_TOOL AND NOT DEFINED AMP_TOOL_SANITIZER_FLAGS)
  set(AMP_TOOL_SANITIZER_FLAGS -fsanitize=${AMP_SANITIZE_TOOL} -fno-sanitize-recover=all
      -fno-omit-frame-pointer -O1)
  set(AMP_TOOL_SANITIZER_LINK_FLAGS -fsanitize=${AMP_SANITIZE_TOOL})
  if(AMP_SANITIZE_TOOL MATCHES "undefined")
    list(APPEND AMP_TOOL_SANITIZER_FLAGS -fno-sanitize=vptr) # needs RTTI, which LLVM's ABI lacks
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's null checks inlined from clang's headers (LazyOffsetPtr::get) warn of a null `this`
    # that the sanitizer's own branches introduce: not a finding, and fatal under AMP_WERROR.
    list(APPEND AMP_TOOL_SANITIZER_FLAGS -Wno-nonnull)
  endif()
  set(AMP_TOOL_SANITIZER_PRELOAD "")
  if(AMP_SANITIZE_TOOL MATCHES "address")
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      set(_amp_asan_runtime libasan.so)
    else()
      set(_amp_asan_runtime libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
      list(APPEND AMP_TOOL_SANITIZER_LINK_FLAGS -shared-libsan)
    endif()
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${_amp_asan_runtime}
                    OUTPUT_VARIABLE AMP_TOOL_SANITIZER_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${AMP_TOOL_SANITIZER_PRELOAD}" OR NOT EXISTS "${AMP_TOOL_SANITIZER_PRELOAD}")
      message(FATAL_ERROR "AMP_SANITIZE_TOOL: ${CMAKE_CXX_COMPILER} has no ${_amp_asan_runtime}")
    endif()
  endif()
  message(STATUS "the tool is built with -fsanitize=${AMP_SANITIZE_TOOL}")
endif()

function(amp_llvm_target target)
  target_include_directories(${target} SYSTEM PUBLIC ${LLVM_INCLUDE_DIRS} ${CLANG_INCLUDE_DIRS})
  target_compile_definitions(${target} PUBLIC ${LLVM_DEFINITIONS})
  if(NOT LLVM_ENABLE_RTTI)
    target_compile_options(${target} PUBLIC -fno-rtti)
  endif()
  target_compile_options(${target} PRIVATE ${AMP_WARNING_FLAGS})
  if(AMP_SANITIZE_TOOL)
    # PUBLIC: whatever links the engine (the unit tests) is instrumented alike.
    target_compile_options(${target} PUBLIC ${AMP_TOOL_SANITIZER_FLAGS})
    target_link_options(${target} PUBLIC ${AMP_TOOL_SANITIZER_LINK_FLAGS})
  endif()
endfunction()
