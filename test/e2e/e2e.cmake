# amp_e2e_programs(<before dir> <migrated dir> <programs>): for each program, a before executable,
# one migrated executable per level in AMP_E2E_LEVELS_<program>, and a ctest e2e.<program>.<level>
# that runs compare.py on the pair. Shared by the main build and the nested torch2 build.
function(amp_e2e_programs before_dir migrated_dir programs)
  set(compare ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/compare.py)
  # One precompiled <torch/torch.h> for every program: it is most of each TU's compile time.
  add_library(amp_e2e_pch OBJECT ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/pch.cpp)
  target_link_libraries(amp_e2e_pch PUBLIC amp::torch)
  target_include_directories(amp_e2e_pch PUBLIC ${before_dir})
  target_precompile_headers(amp_e2e_pch PUBLIC <torch/torch.h> <ATen/autocast_mode.h>
                            <amp/torch.h>)
  get_target_property(torch_include_dirs amp::torch INTERFACE_INCLUDE_DIRECTORIES)

  foreach(program IN LISTS programs)
    set(before_exe e2e_${program}_before)
    add_executable(${before_exe} ${before_dir}/${program}.cpp)
    target_link_libraries(${before_exe} PRIVATE amp_e2e_pch)
    target_precompile_headers(${before_exe} REUSE_FROM amp_e2e_pch)
    if(AMP_TORCH_RPATH)
      set_target_properties(${before_exe} PROPERTIES BUILD_RPATH "${AMP_TORCH_RPATH}")
    endif()

    foreach(level IN LISTS AMP_E2E_LEVELS_${program})
      set(after_src ${CMAKE_CURRENT_BINARY_DIR}/migrated/${program}_${level}.cpp)
      if(AMP_E2E_WITH_TOOL)
        set(include_flags -I${before_dir})
        foreach(dir IN LISTS torch_include_dirs)
          if(NOT dir MATCHES "^\\$<")
            list(APPEND include_flags -isystem ${dir})
          endif()
        endforeach()
        add_custom_command(OUTPUT ${after_src}
          COMMAND ${CMAKE_COMMAND} -E copy ${before_dir}/${program}.cpp ${after_src}
          COMMAND $<TARGET_FILE:amp-migrate> --fix --level=${level} ${after_src} --
                  -std=c++17 ${include_flags}
          DEPENDS amp-migrate ${before_dir}/${program}.cpp
          COMMENT "amp-migrate --level=${level} ${program}.cpp" VERBATIM)
      else()
        # The hand-migrated copy is the O1 form; other levels differ only in the level argument.
        file(READ ${migrated_dir}/${program}.cpp content)
        string(REPLACE "amp::Level::O1" "amp::Level::${level}" content "${content}")
        file(CONFIGURE OUTPUT ${after_src} CONTENT "${content}" @ONLY)
        set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                     ${migrated_dir}/${program}.cpp)
      endif()
      set(after_exe e2e_${program}_${level})
      add_executable(${after_exe} ${after_src})
      target_link_libraries(${after_exe} PRIVATE amp_e2e_pch)
      target_precompile_headers(${after_exe} REUSE_FROM amp_e2e_pch)
      if(AMP_TORCH_RPATH)
        set_target_properties(${after_exe} PROPERTIES BUILD_RPATH "${AMP_TORCH_RPATH}")
      endif()
      add_test(NAME e2e.${program}.${level}
               COMMAND ${Python3_EXECUTABLE} ${compare} --before $<TARGET_FILE:${before_exe}>
                       --after $<TARGET_FILE:${after_exe}> --level ${level})
      set_tests_properties(e2e.${program}.${level} PROPERTIES LABELS e2e)
    endforeach()
  endforeach()
endfunction()
