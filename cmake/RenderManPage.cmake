# Renders one man page at build time, run as `cmake -P` by ManPages.cmake:
#   -DMD2MAN=go-md2man -DOUTPUT=<dir>/<name>.<section> and either
#   -DBINARY=<trainwatch>                     the Markdown is `trainwatch manual`, or
#   -DHEADER=<file> -DSOURCE=<file> -DFOOTER=<file>   the Markdown is their concatenation.
# Writes OUTPUT.md, OUTPUT (roff) and OUTPUT.gz: gzip -9n as Debian policy asks, without a
# name or time stamp in the header so that two builds give the same .deb.
cmake_minimum_required(VERSION 3.25)

set(markdown "${OUTPUT}.md")
if(DEFINED BINARY)
  execute_process(COMMAND "${BINARY}" manual OUTPUT_FILE "${markdown}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${BINARY} manual failed: ${status}")
  endif()
else()
  file(READ "${HEADER}" header)
  file(READ "${SOURCE}" source)
  # go-md2man 2.0 renders a table as tbl columns that never wrap, wider than any terminal
  # (man --warnings: "table wider than line width"); so each row of a two-column table
  # becomes a definition list entry (.TP), the header row dropped.
  string(REGEX REPLACE "\n\\|[^\n]*\\|\n\\|[-:| ]+\\|\n" "\n\n" source "${source}")
  string(REGEX REPLACE "\n\\| *([^|\n]*[^| \n]) *\\| *([^|\n]*[^| \n]) *\\|"
    "\n\\1\n:   \\2\n" source "${source}")
  file(READ "${FOOTER}" footer)
  file(WRITE "${markdown}" "${header}\n${source}\n${footer}")
endif()

execute_process(COMMAND "${MD2MAN}" -in "${markdown}" -out "${OUTPUT}" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${MD2MAN} failed on ${markdown}: ${status}")
endif()
execute_process(COMMAND gzip -9 -n -c "${OUTPUT}" OUTPUT_FILE "${OUTPUT}.gz"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "gzip ${OUTPUT} failed: ${status}")
endif()
