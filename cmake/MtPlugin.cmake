# mt_add_plugin(): how every megatron.cpp plugin is built, in this tree and out of it. The
# source tree includes this file from MtTargets.cmake; `cmake --install` puts it (with
# plugin_exports.map) in lib/cmake/megatron_cpp/, where find_package(megatron_cpp) includes it.
#
#   mt_add_plugin(KIND NAME SOURCES ... ENTRY plugin.cpp [LIBS ...])
#     KIND: tokenizer | model | checkpoint | parallel | comm | backend
#     -> mt_<kind>_<name>_impl : static library (PIC) of SOURCES that unit tests link directly
#     -> mt_<kind>_<name>      : MODULE libmt_<kind>_<name>.so holding ENTRY (the MT_PLUGIN
#                                macro), built into MT_PLUGIN_OUTPUT_DIR and installed to
#                                <prefix>/lib/mt/plugins, where the tools look for it
#   MT_PLUGIN_OUTPUT_DIR: the build tree's lib/mt/plugins in this project; out of the tree the
#   plugin project's top build directory unless it sets the variable (so
#   `megatron-preprocess --plugin-dir <build> ...` finds it).

include_guard(GLOBAL)

function(mt_add_plugin kind name)
    cmake_parse_arguments(P "" "ENTRY" "SOURCES;LIBS" ${ARGN})
    set(kinds tokenizer model checkpoint parallel comm backend)
    if(NOT kind IN_LIST kinds)
        message(FATAL_ERROR "mt_add_plugin(${kind} ${name}): KIND must be one of ${kinds}")
    endif()
    if(NOT name MATCHES "^[A-Za-z0-9_]+$")
        message(FATAL_ERROR "mt_add_plugin(${kind} ${name}): NAME may hold letters, digits and _")
    endif()
    if(NOT P_SOURCES OR NOT P_ENTRY)
        message(FATAL_ERROR "mt_add_plugin(${kind} ${name}): SOURCES and ENTRY are required")
    endif()
    if(DEFINED MT_PLUGIN_OUTPUT_DIR)
        set(out_dir ${MT_PLUGIN_OUTPUT_DIR})
    else()
        set(out_dir ${CMAKE_BINARY_DIR})
    endif()
    # Plugins get core's C++ settings whatever the including project chose: C++20 (from
    # megatron_cpp::mt_core) without GNU extensions, PIC, and hidden symbols.
    set(settings CXX_EXTENSIONS OFF CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
                 POSITION_INDEPENDENT_CODE ON)

    set(impl mt_${kind}_${name}_impl)
    add_library(${impl} STATIC ${P_SOURCES})
    target_link_libraries(${impl} PUBLIC megatron_cpp::mt_core ${P_LIBS})
    target_include_directories(${impl} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
    set_target_properties(${impl} PROPERTIES ${settings})

    set(mod mt_${kind}_${name})
    add_library(${mod} MODULE ${P_ENTRY})
    target_link_libraries(${mod} PRIVATE ${impl})
    # The loader only accepts files named libmt_<kind>_<name>.so whose entry says kind/name.
    set_target_properties(${mod} PROPERTIES ${settings}
        OUTPUT_NAME mt_${kind}_${name}
        PREFIX lib
        SUFFIX .so
        LIBRARY_OUTPUT_DIRECTORY ${out_dir}
        BUILD_RPATH "$ORIGIN/../.."
        INSTALL_RPATH "$ORIGIN/../..")
    # Only mt_plugin_entry leaves the .so (libstdc++ would otherwise export weak template
    # instantiations that could bind across plugins).
    set(exports_map ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin_exports.map)
    target_link_options(${mod} PRIVATE -Wl,--version-script=${exports_map})
    # clang's sanitizer runtimes are linked into the executable only: the fuzz build's plugins
    # leave the __asan_* symbols for it to resolve.
    if(NOT MT_FUZZ)
        target_link_options(${mod} PRIVATE -Wl,--no-undefined)
    endif()
    set_property(TARGET ${mod} APPEND PROPERTY LINK_DEPENDS ${exports_map})
    # lib, not CMAKE_INSTALL_LIBDIR: the loader looks in <exe>/../lib/mt/plugins.
    install(TARGETS ${mod} LIBRARY DESTINATION lib/mt/plugins)
    set_property(GLOBAL APPEND PROPERTY MT_PLUGIN_TARGETS ${mod})
endfunction()
