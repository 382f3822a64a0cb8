# Writes kevlaya-orch.1.gz from the program's own --help (and each subcommand's --help):
#   cmake -DPROG=path/kevlaya-orch -DOUT=dir -DDATE=YYYY-MM-DD -P cmake/manpage.cmake
# The CLI is the one owner of its options; this only lays its help text out as roff.
function(help out)
  execute_process(COMMAND ${PROG} ${ARGN} --help OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROG} ${ARGN} --help failed (${rc})")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Help text as roff: no fill, backslashes and leading dots or quotes escaped.
function(roff out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

help(main)
execute_process(COMMAND ${PROG} --version OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REGEX MATCH "^[^\n]*" summary "${main}")
string(REGEX REPLACE "^kevlaya-orch: " "" summary "${summary}")
# Subcommand names: the first word of each indented line after the SUBCOMMANDS heading.
string(REGEX MATCH "(SUBCOMMANDS|Subcommands):\n.*" subs_text "${main}")
string(REGEX MATCHALL "\n  [a-z][a-z-]*" subs "${subs_text}")
set(page ".TH KEVLAYA-ORCH 1 \"${DATE}\" \"${version}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\nkevlaya-orch \\- ${summary}\n")
string(APPEND page ".SH SYNOPSIS\n.B kevlaya-orch\n[\\fIOPTIONS\\fR] \\fISUBCOMMAND\\fR [\\fIARGS\\fR]\n")
roff(body "${main}")
string(APPEND page ".SH DESCRIPTION\n${body}")
string(APPEND page ".SH SUBCOMMANDS\n")
foreach(s ${subs})
  string(STRIP "${s}" s)
  help(text ${s})
  roff(body "${text}")
  string(APPEND page ".SS ${s}\n${body}")
endforeach()
string(APPEND page ".SH FILES\n.TP\n/etc/kevlaya/kevlaya.yaml\nThe configuration the systemd unit serves.\n"
       ".TP\n/usr/share/kevlaya-orch/schema/\nJSON Schemas of kevlaya.yaml, profiles and pipelines "
       "(\\fBkevlaya-orch schema\\fR).\n")
string(APPEND page ".SH SEE ALSO\n\\fBllama-server\\fR(1), \\fBsystemctl\\fR(1)\n")
file(WRITE ${OUT}/kevlaya-orch.1 "${page}")
execute_process(COMMAND gzip -9nf ${OUT}/kevlaya-orch.1 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip failed")
endif()
