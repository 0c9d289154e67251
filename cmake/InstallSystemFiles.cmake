# The files that live outside the prefix in a Debian layout: the operator's config
# /etc/trainwatch/trainwatch.yaml (a dpkg conffile) and the systemd unit in
# /lib/systemd/system. GNUInstallDirs resolves "prefix /usr -> /etc" in
# CMAKE_INSTALL_FULL_SYSCONFDIR from the prefix given at configure time, but
# `cmake --install --prefix /usr` and cpack choose the prefix at install time; so its rule
# is applied then: prefix / or /usr -> /etc, /opt/X -> /etc/opt/X, any other P -> P/etc
# (the unit likewise: /lib/systemd/system, else P/lib/systemd/system).
set(TRAINWATCH_SYSTEMD_UNIT_DIR "" CACHE PATH
  "Where the systemd unit goes (empty: /lib/systemd/system for prefix /usr, else <prefix>/lib/systemd/system)")

install(CODE "
  set(tw_sysconfdir \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(tw_unit_dir \"${TRAINWATCH_SYSTEMD_UNIT_DIR}\")
  set(tw_config \"${PROJECT_SOURCE_DIR}/daemon/trainwatch.yaml\")
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
