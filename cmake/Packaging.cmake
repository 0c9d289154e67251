# The Debian package: `cpack -G DEB` in the build directory (or `cmake --build B --target
# package`) writes trainwatch_<version>_<arch>.deb. Its Depends come from dpkg-shlibdeps
# on the binary's shared libraries, so they follow whatever the build linked.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME trainwatch)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "trainwatch maintainers <maintainers@users.noreply.a-seed-acef4eeb.example>"
  CACHE STRING "The package's Maintainer")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "catch crashes and hangs of ML training jobs, with the evidence")
# CPack puts the summary in front and indents these lines into the extended description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "trainwatch watches the logs of ML training jobs (Intel Gaudi, NVIDIA, Ascend),
$HABANA_LOGS and the kernel log, and recognises crashes and hangs from
operator-editable rules: Python tracebacks, collective timeouts, out-of-memory
errors, driver errors, the OOM killer, stalled progress bars and silence. Each
failure becomes one incident, with a bundle of evidence (device tools' output,
the training processes' command lines and environments, log tails) captured at
that moment.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # trainwatch_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libcurl and libarchive are loaded at run time (src/alert/curl_library.h,
# src/bundle/archive_library.h), so dpkg-shlibdeps does not see them.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcurl4 (>= 7.85.0), libarchive13 (>= 3.6.2)")
# zstd opens bundles (tar --zstd); procps and pciutils are the ps and lspci collectors (the
# job's Python packages are read without pip: src/collect/python_packages.h).
# gdb with python3.11-dbg (py-bt) and elfutils (eu-stack): the ranks' stacks at a hang; libdw1
# (loaded at run time) reads build ids, so gdb loads only the helper of the exact interpreter.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "zstd, procps, gdb, python3.11-dbg, elfutils, libdw1")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "pciutils")

# The install runs with prefix /usr under DESTDIR, so that InstallSystemFiles.cmake puts the
# config in /etc and the unit in /lib/systemd/system, as on the installed system.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

# conffiles: dpkg keeps the operator's edits of the config across upgrades and asks
# before replacing them. The maintainer scripts only tell systemd about the unit.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${CMAKE_CURRENT_LIST_DIR}/debian/conffiles"
  "${CMAKE_CURRENT_LIST_DIR}/debian/postinst"
  "${CMAKE_CURRENT_LIST_DIR}/debian/prerm"
  "${CMAKE_CURRENT_LIST_DIR}/debian/postrm")
# Control files get 0644, maintainer scripts 0755, whatever their mode in the checkout.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
