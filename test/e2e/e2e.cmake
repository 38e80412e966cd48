# amp_e2e_programs(<before dir> <migrated dir> <programs>): for each program, a before executable,
# one migrated executable per level in AMP_E2E_LEVELS_<program>, and a ctest e2e.<program>.<level>
# that runs compare.py on the pair (or e2e.<program>.<level>.<n>ranks, as n processes, for each n
# in AMP_E2E_RANKS_<program>). Shared by the main build and the nested torch2 build.
# A program in two translation units has a second file <program>.model.cpp beside it: linked into
# both executables, and in the tool's run (copied, so the run may not rewrite the source tree; the
# migrated executable links the copy the run left).
macro(amp_e2e_link target)
  target_link_libraries(${target} PRIVATE amp_e2e_common)
  if(AMP_E2E_PCH)
    target_precompile_headers(${target} REUSE_FROM amp_e2e_common)
  endif()
  if(AMP_E2E_LAUNCHER)
    set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER "${AMP_E2E_LAUNCHER}")
  endif()
  if(AMP_TORCH_RPATH)
    set_target_properties(${target} PROPERTIES BUILD_RPATH "${AMP_TORCH_RPATH}")
  endif()
endmacro()

function(amp_e2e_programs before_dir migrated_dir programs)
  set(compare ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/compare.py)
  # Common settings of every program. With AMP_E2E_PCH (worth it from about 5 programs) one
  # precompiled <torch/torch.h> serves them all: it is most of each TU's compile time.
  # Where g++ is the compiler and clang++-19 is there, clang compiles the programs against the
  # precompiled header (clang-pch-launcher.sh: its PCH also holds the header's template
  # instantiations, which more than halves each program's compile time). AMP_E2E_CLANG=OFF keeps g++.
  set(AMP_E2E_LAUNCHER "")
  if(NOT DEFINED AMP_E2E_CLANG)
    set(AMP_E2E_CLANG ON)
  endif()
  if(AMP_E2E_PCH AND AMP_E2E_CLANG AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    find_program(AMP_E2E_CLANGXX NAMES clang++-19)
    if(AMP_E2E_CLANGXX)
      set(AMP_E2E_LAUNCHER ${CMAKE_COMMAND} -E env AMP_E2E_CCACHE=${AMP_CCACHE}
          ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/clang-pch-launcher.sh ${AMP_E2E_CLANGXX})
    endif()
  endif()
  if(AMP_E2E_PCH)
    add_library(amp_e2e_common OBJECT ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/pch.cpp)
    target_precompile_headers(amp_e2e_common PUBLIC <torch/torch.h> <ATen/autocast_mode.h>
                              <amp/torch.h>)
    if(AMP_E2E_LAUNCHER)
      set_target_properties(amp_e2e_common PROPERTIES CXX_COMPILER_LAUNCHER "${AMP_E2E_LAUNCHER}")
    endif()
  else()
    add_library(amp_e2e_common INTERFACE)
  endif()
  set(scope PUBLIC)
  if(NOT AMP_E2E_PCH)
    set(scope INTERFACE)
  endif()
  target_link_libraries(amp_e2e_common ${scope} amp::torch)
  target_include_directories(amp_e2e_common ${scope} ${before_dir}
                             ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/programs)
  # The programs' own code is tiny and libtorch does the work: optimising it only costs compile
  # time (-O0 about halves it).
  target_compile_options(amp_e2e_common ${scope} -O0)
  get_target_property(torch_include_dirs amp_torch INTERFACE_INCLUDE_DIRECTORIES)

  foreach(program IN LISTS programs)
    set(before_exe e2e_${program}_before)
    set(second_tu "")
    if(EXISTS ${before_dir}/${program}.model.cpp)
      set(second_tu ${before_dir}/${program}.model.cpp)
    endif()
    add_executable(${before_exe} ${before_dir}/${program}.cpp ${second_tu})
    amp_e2e_link(${before_exe})

    foreach(level IN LISTS AMP_E2E_LEVELS_${program})
      set(after_src ${CMAKE_CURRENT_BINARY_DIR}/migrated/${program}_${level}.cpp)
      if(AMP_E2E_WITH_TOOL AND NOT AMP_E2E_HAND_ONLY_${program})
        # Migrated below, in one run of the tool per level and set of extra flags.
        string(MAKE_C_IDENTIFIER "${level}_${AMP_E2E_TOOL_FLAGS_${program}}" batch)
        if(NOT batch IN_LIST batches)
          list(APPEND batches ${batch})
          set(batch_level_${batch} ${level})
          set(batch_flags_${batch} ${AMP_E2E_TOOL_FLAGS_${program}})
        endif()
        list(APPEND batch_programs_${batch} ${program})
      else()
        # The hand-migrated copy is the O1 form; other levels differ only in the level argument.
        file(READ ${migrated_dir}/${program}.cpp content)
        string(REPLACE "amp::Level::O1" "amp::Level::${level}" content "${content}")
        file(CONFIGURE OUTPUT ${after_src} CONTENT "${content}" @ONLY)
        set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                     ${migrated_dir}/${program}.cpp)
      endif()
      set(after_exe e2e_${program}_${level})
      set(after_second_tu ${second_tu})
      if(second_tu AND AMP_E2E_WITH_TOOL AND NOT AMP_E2E_HAND_ONLY_${program})
        set(after_second_tu ${CMAKE_CURRENT_BINARY_DIR}/migrated/${program}_${level}.model.cpp)
      endif()
      add_executable(${after_exe} ${after_src} ${after_second_tu})
      amp_e2e_link(${after_exe})
      if(AMP_E2E_WITH_TOOL AND NOT AMP_E2E_HAND_ONLY_${program} AND level STREQUAL "O1")
        # The hand-migrated copy is the expected output: the tool must produce exactly it.
        add_test(NAME e2e.${program}.expected_output
                 COMMAND ${CMAKE_COMMAND} -E compare_files ${after_src}
                         ${migrated_dir}/${program}.cpp)
        set_tests_properties(e2e.${program}.expected_output PROPERTIES LABELS e2e)
      endif()
      if(NOT AMP_E2E_RANKS_${program})
        set(rtol "")
        if(AMP_E2E_RTOL_${program} AND level STREQUAL "O1")
          set(rtol --rtol ${AMP_E2E_RTOL_${program}})
        endif()
        add_test(NAME e2e.${program}.${level}
                 COMMAND ${Python3_EXECUTABLE} ${compare} --before $<TARGET_FILE:${before_exe}>
                         --after $<TARGET_FILE:${after_exe}> --level ${level} ${rtol})
        set_tests_properties(e2e.${program}.${level} PROPERTIES LABELS e2e)
      endif()
      # Data-parallel programs: e2e.<program>.<level>.<n>ranks for each n in AMP_E2E_RANKS_<program>.
      foreach(ranks IN LISTS AMP_E2E_RANKS_${program})
        add_test(NAME e2e.${program}.${level}.${ranks}ranks
                 COMMAND ${Python3_EXECUTABLE} ${compare} --before $<TARGET_FILE:${before_exe}>
                         --after $<TARGET_FILE:${after_exe}> --level ${level} --ranks ${ranks})
        set_tests_properties(e2e.${program}.${level}.${ranks}ranks PROPERTIES LABELS e2e TIMEOUT 300)
      endforeach()
      if(AMP_E2E_FP32_ENV_${program} AND level STREQUAL "O1")
        # The program's fp32 mode (its run-time AMP flag off): the migrated program converts at O0
        # and must compute what the original computed, to 1e-6.
        add_test(NAME e2e.${program}.fp32
                 COMMAND ${Python3_EXECUTABLE} ${compare} --before $<TARGET_FILE:${before_exe}>
                         --after $<TARGET_FILE:${after_exe}> --level O0 --rtol 1e-6
                         --env ${AMP_E2E_FP32_ENV_${program}})
        set_tests_properties(e2e.${program}.fp32 PROPERTIES LABELS e2e)
      endif()
    endforeach()
  endforeach()

  # The tool migrates the programs of one level (and one set of extra flags) in one run, as a
  # codebase is migrated: they start with the same includes, whose preamble it then builds once
  # for all of them (docs/performance.md).
  if(batches)
    set(include_flags -I${before_dir})
    if(NOT before_dir STREQUAL "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/programs")
      list(APPEND include_flags -I${CMAKE_CURRENT_FUNCTION_LIST_DIR}/programs)
    endif()
    foreach(dir IN LISTS torch_include_dirs)
      # Generator expressions are the binding's own dirs; the system dirs must stay last in the
      # search order (an explicit -isystem /usr/include breaks #include_next).
      if(NOT dir MATCHES "^\\$<" AND NOT dir MATCHES "^/usr(/local)?/include/?$")
        list(APPEND include_flags -isystem ${dir})
      endif()
    endforeach()
  endif()
  foreach(batch IN LISTS batches)
    set(level ${batch_level_${batch}})
    set(outputs "")
    set(sources "")
    set(copies "")
    foreach(program IN LISTS batch_programs_${batch})
      set(after_src ${CMAKE_CURRENT_BINARY_DIR}/migrated/${program}_${level}.cpp)
      list(APPEND outputs ${after_src})
      list(APPEND sources ${before_dir}/${program}.cpp)
      list(APPEND copies COMMAND ${CMAKE_COMMAND} -E copy ${before_dir}/${program}.cpp ${after_src})
      if(EXISTS ${before_dir}/${program}.model.cpp)
        set(second_tu ${CMAKE_CURRENT_BINARY_DIR}/migrated/${program}_${level}.model.cpp)
        list(APPEND outputs ${second_tu})
        list(APPEND sources ${before_dir}/${program}.model.cpp)
        list(APPEND copies COMMAND ${CMAKE_COMMAND} -E copy ${before_dir}/${program}.model.cpp ${second_tu})
      endif()
    endforeach()
    list(LENGTH outputs count)
    add_custom_command(OUTPUT ${outputs}
      ${copies}
      COMMAND ${AMP_E2E_TOOL_ENV} ${AMP_E2E_TOOL} --fix --level=${level} ${outputs} --
              -std=c++17 ${include_flags} ${batch_flags_${batch}}
      DEPENDS ${AMP_E2E_TOOL_DEPENDS} ${sources}
      COMMENT "amp-migrate --level=${level}: ${count} files" VERBATIM)
  endforeach()
endfunction()
