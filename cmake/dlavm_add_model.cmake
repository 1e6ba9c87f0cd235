# dlavm_add_model: runs a model program at build time and adds what it generates to a target,
# as protobuf_generate and Qt's moc do for generated code.
#
#   dlavm_add_model(TARGET firmware GENERATOR gen_models MODELS resnet18 mlp
#                   [OUTPUT_DIRECTORY dir] [ARGS arg...] [DEPENDS file...])
#
# GENERATOR is an executable target (or a program's path): the user's model program, which
# builds its models and calls dlavm::deploy::emit for each into the directory it gets as its
# first argument, followed by ARGS. Each name in MODELS is a model it emits: <name>.hpp,
# <name>.weights.bin and <name>.insts.bin in OUTPUT_DIRECTORY (default: <target>_models in the
# current binary directory). The headers join TARGET's sources, the directory its include path,
# and TARGET builds after them; the directory is TARGET's DLAVM_MODEL_DIRECTORY property. The
# headers need only dlavm's runtime headers: link dlavm::runtime (C++17, no dependencies).
function(dlavm_add_model)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;GENERATOR;OUTPUT_DIRECTORY"
                        "MODELS;ARGS;DEPENDS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dlavm_add_model: unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required TARGET GENERATOR MODELS)
    if(NOT arg_${required})
      message(FATAL_ERROR "dlavm_add_model: ${required} is required")
    endif()
  endforeach()
  if(NOT TARGET ${arg_TARGET})
    message(FATAL_ERROR "dlavm_add_model: '${arg_TARGET}' is not a target")
  endif()
  set(dir ${arg_OUTPUT_DIRECTORY})
  if(NOT dir)
    set(dir ${CMAKE_CURRENT_BINARY_DIR}/${arg_TARGET}_models)
  endif()
  set(outputs)
  set(headers)
  foreach(model IN LISTS arg_MODELS)
    list(APPEND headers ${dir}/${model}.hpp)
    list(APPEND outputs ${dir}/${model}.hpp ${dir}/${model}.weights.bin ${dir}/${model}.insts.bin)
  endforeach()
  if(TARGET ${arg_GENERATOR})
    set(command $<TARGET_FILE:${arg_GENERATOR}>)
    set(depends ${arg_GENERATOR})
  else()
    set(command ${arg_GENERATOR})
    set(depends)
  endif()
  string(JOIN " " names ${arg_MODELS})
  add_custom_command(OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${command} ${dir} ${arg_ARGS}
    DEPENDS ${depends} ${arg_DEPENDS}
    COMMENT "Generating the models ${names} of ${arg_TARGET}"
    VERBATIM)
  target_sources(${arg_TARGET} PRIVATE ${headers})
  target_include_directories(${arg_TARGET} PRIVATE ${dir})
  set_target_properties(${arg_TARGET} PROPERTIES DLAVM_MODEL_DIRECTORY ${dir})
endfunction()
