# The files that live outside the prefix in a Debian layout: the operator's config
# /etc/trainwatch/trainwatch.yaml (a dpkg conffile) and the systemd unit in
# /lib/systemd/system. GNUInstallDirs resolves "prefix /usr -> /etc" in
# CMAKE_INSTALL_FULL_SYSCONFDIR from the prefix given at configure time, but
# `cmake --install --prefix /usr` and cpack choose the prefix at install time; so its rule
# is applied then: prefix / or /usr -> /etc, /opt/X -> /etc/opt/X, any other P -> P/etc
# (the unit likewise: /lib/systemd/system, else P/lib/systemd/system).
# The /etc config is the shipped default with system paths for what the default keeps under
# ~ (the unit's dynamic user has no home, and `trainwatch status` run by root must find the
# service's socket): state in /var/lib/trainwatch (the unit's StateDirectory=), job logs in
# /var/log/training, $HABANA_LOGS defaulting to /var/log/habana_logs as in Habana's images.
# The environment overrides still apply (the container image sets TRAINWATCH_STATE_DIR).
file(READ "${PROJECT_SOURCE_DIR}/daemon/trainwatch.yaml" tw_system_config)
foreach(pair
    "\${STATE_DIRECTORY:-~/.local/state/trainwatch}|\${STATE_DIRECTORY:-/var/lib/trainwatch}"
    "~/trainwatch-logs|/var/log/training"
    "~/.habana_logs|/var/log/habana_logs")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 tw_from)
  list(GET pair 1 tw_to)
  string(FIND "${tw_system_config}" "${tw_from}" tw_at)
  if(tw_at EQUAL -1)
    message(FATAL_ERROR "daemon/trainwatch.yaml no longer contains '${tw_from}': update "
                        "cmake/InstallSystemFiles.cmake, which makes /etc/trainwatch's copy")
  endif()
  string(REPLACE "${tw_from}" "${tw_to}" tw_system_config "${tw_system_config}")
endforeach()
string(REPLACE "# trainwatch daemon config: the default, used when no --config is given."
  "# trainwatch daemon config, /etc/trainwatch/trainwatch.yaml: the host's (the systemd unit's,\n# and any trainwatch command's without --config)."
  tw_system_config "${tw_system_config}")
file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/etc/trainwatch.yaml" CONTENT "${tw_system_config}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  "${PROJECT_SOURCE_DIR}/daemon/trainwatch.yaml")

set(TRAINWATCH_SYSTEMD_UNIT_DIR "" CACHE PATH
  "Where the systemd unit goes (empty: /lib/systemd/system for prefix /usr, else <prefix>/lib/systemd/system)")

install(CODE "
  set(tw_sysconfdir \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(tw_unit_dir \"${TRAINWATCH_SYSTEMD_UNIT_DIR}\")
  set(tw_config \"${PROJECT_BINARY_DIR}/etc/trainwatch.yaml\")
  set(tw_unit \"${PROJECT_SOURCE_DIR}/systemd/trainwatch.service\")")
install(CODE [[
  if(CMAKE_INSTALL_PREFIX MATCHES "^/(usr/?)?$")
    set(tw_system_prefix "")
  else()
    set(tw_system_prefix "${CMAKE_INSTALL_PREFIX}")
  endif()
  if(NOT IS_ABSOLUTE "${tw_sysconfdir}")
    if(CMAKE_INSTALL_PREFIX MATCHES "^/opt/")
      set(tw_sysconfdir "/${tw_sysconfdir}${CMAKE_INSTALL_PREFIX}")
    else()
      set(tw_sysconfdir "${tw_system_prefix}/${tw_sysconfdir}")
    endif()
  endif()
  if(tw_unit_dir STREQUAL "")
    set(tw_unit_dir "${tw_system_prefix}/lib/systemd/system")
  endif()
  file(INSTALL DESTINATION "${tw_sysconfdir}/trainwatch" TYPE FILE FILES "${tw_config}")
  file(INSTALL DESTINATION "${tw_unit_dir}" TYPE FILE FILES "${tw_unit}")
]])
