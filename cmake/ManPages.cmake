# Man pages, rendered by go-md2man at build time and installed gzipped:
# - trainwatch(1) from `trainwatch manual`, which walks the same CLI11 definition that
#   --help prints, so the page cannot miss a command or an option;
# - trainwatch-rules(5) from rules/README.md, the one description of the rule format, with a
#   title and NAME section put in front.
option(TRAINWATCH_MAN_PAGES "Render and install the man pages (needs go-md2man)" ON)
if(NOT TRAINWATCH_MAN_PAGES)
  return()
endif()

find_program(TRAINWATCH_GO_MD2MAN go-md2man)
if(NOT TRAINWATCH_GO_MD2MAN)
  message(FATAL_ERROR
    "go-md2man not found: it renders the man pages. Install it with `bash .ci/install-deps` "
    "(Debian package go-md2man), or configure with -DTRAINWATCH_MAN_PAGES=OFF.")
endif()

set(TRAINWATCH_MAN_DIR "${CMAKE_CURRENT_BINARY_DIR}/man")
file(MAKE_DIRECTORY "${TRAINWATCH_MAN_DIR}")
set(render "${CMAKE_CURRENT_LIST_DIR}/RenderManPage.cmake")

add_custom_command(
  OUTPUT "${TRAINWATCH_MAN_DIR}/trainwatch.1" "${TRAINWATCH_MAN_DIR}/trainwatch.1.gz"
  COMMAND "${CMAKE_COMMAND}" "-DMD2MAN=${TRAINWATCH_GO_MD2MAN}"
    "-DBINARY=$<TARGET_FILE:trainwatch>" "-DOUTPUT=${TRAINWATCH_MAN_DIR}/trainwatch.1"
    -P "${render}"
  DEPENDS trainwatch "${render}"
  COMMENT "Rendering trainwatch(1) from trainwatch manual"
  VERBATIM)

configure_file("${CMAKE_CURRENT_LIST_DIR}/man/trainwatch-rules.5.head.md.in"
  "${TRAINWATCH_MAN_DIR}/trainwatch-rules.5.head.md" @ONLY)
set(rules_tail "${CMAKE_CURRENT_LIST_DIR}/man/trainwatch-rules.5.tail.md")
add_custom_command(
  OUTPUT "${TRAINWATCH_MAN_DIR}/trainwatch-rules.5" "${TRAINWATCH_MAN_DIR}/trainwatch-rules.5.gz"
  COMMAND "${CMAKE_COMMAND}" "-DMD2MAN=${TRAINWATCH_GO_MD2MAN}"
    "-DHEADER=${TRAINWATCH_MAN_DIR}/trainwatch-rules.5.head.md"
    "-DSOURCE=${PROJECT_SOURCE_DIR}/rules/README.md" "-DFOOTER=${rules_tail}"
    "-DOUTPUT=${TRAINWATCH_MAN_DIR}/trainwatch-rules.5"
    -P "${render}"
  DEPENDS "${PROJECT_SOURCE_DIR}/rules/README.md" "${TRAINWATCH_MAN_DIR}/trainwatch-rules.5.head.md"
    "${rules_tail}" "${render}"
  COMMENT "Rendering trainwatch-rules(5) from rules/README.md"
  VERBATIM)

add_custom_target(man_pages ALL DEPENDS
  "${TRAINWATCH_MAN_DIR}/trainwatch.1.gz" "${TRAINWATCH_MAN_DIR}/trainwatch-rules.5.gz")

install(FILES "${TRAINWATCH_MAN_DIR}/trainwatch.1.gz" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
install(FILES "${TRAINWATCH_MAN_DIR}/trainwatch-rules.5.gz"
  DESTINATION "${CMAKE_INSTALL_MANDIR}/man5")
