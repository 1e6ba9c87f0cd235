# Lists the files of DIR with their sizes (make demo: what deploy::emit wrote).
file(GLOB files ${DIR}/*)
list(SORT files)
foreach(f IN LISTS files)
  file(SIZE ${f} size)
  get_filename_component(name ${f} NAME)
  message("  ${name}  ${size} bytes")
endforeach()
