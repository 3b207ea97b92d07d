# What `cmake --install` lays out, and the packages CPack builds from it
# (docs/install.md). Paths follow GNUInstallDirs; the analysis package goes
# where the system Python finds it (Debian: lib/python3/dist-packages).
include(GNUInstallDirs)

set(FABSCOPE_PYTHON_DIR "${CMAKE_INSTALL_LIBDIR}/python3/dist-packages" CACHE STRING
    "Where the analysis package is installed, relative to the prefix (the system Python's path)")
if(EXISTS /etc/debian_version)
  # Debian's system Python reads /usr/lib/python3/dist-packages, not the multiarch libdir.
  set(FABSCOPE_PYTHON_DIR "lib/python3/dist-packages" CACHE STRING "" FORCE)
endif()
set(FABSCOPE_DATA_DIR "${CMAKE_INSTALL_DATADIR}/fabscope")

# Libraries outside the system's paths (NCCL under /usr/local/cuda) stay found
# by the installed binary: a package built with CUDA needs NCCL at that path on
# the machines it is installed on (no Debian package provides it); configure
# with -DFABSCOPE_ENABLE_CUDA=OFF for a package that needs nothing outside Debian.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(fabscope PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS fabscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The launch scripts keep their folder (they find lib/, presets/ and slurm/ next
# to themselves); the user-facing ones get a link in bin/.
install(DIRECTORY launch/ DESTINATION ${FABSCOPE_DATA_DIR}/launch USE_SOURCE_PERMISSIONS
        PATTERN "install-deps" EXCLUDE PATTERN "demo" EXCLUDE)
foreach(script fabscope-mpirun fabscope-fit emulated-cluster)
  install(CODE "
    file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
    file(CREATE_LINK \"../${FABSCOPE_DATA_DIR}/launch/${script}\"
         \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/${script}\" SYMBOLIC)")
endforeach()

install(DIRECTORY scenarios/ DESTINATION ${FABSCOPE_DATA_DIR}/scenarios)
install(DIRECTORY analysis/criteria/ DESTINATION ${FABSCOPE_DATA_DIR}/criteria)
install(FILES packaging/nhc/fabscope.nhc DESTINATION ${FABSCOPE_DATA_DIR}/nhc)
# The analysis package, its criteria and the file's schema inside it (verdict.py
# and reader.py look there when installed), no tests.
if(FABSCOPE_INSTALL_PYTHON)
  install(DIRECTORY analysis/fabscope_analysis DESTINATION ${FABSCOPE_PYTHON_DIR}
          PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
  install(DIRECTORY analysis/criteria/ DESTINATION ${FABSCOPE_PYTHON_DIR}/fabscope_analysis/criteria)
  # The reader takes the columns of a table a file lacks from the schema.
  install(FILES src/output/schema.yaml DESTINATION ${FABSCOPE_PYTHON_DIR}/fabscope_analysis)
endif()
install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The man page, made from the binary's own --help texts at build time.
set(FABSCOPE_MAN_PAGE "${CMAKE_CURRENT_BINARY_DIR}/fabscope.1")
add_custom_command(OUTPUT ${FABSCOPE_MAN_PAGE}
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/packaging/make-man-page $<TARGET_FILE:fabscope> ${FABSCOPE_MAN_PAGE}
  DEPENDS fabscope ${CMAKE_CURRENT_SOURCE_DIR}/packaging/make-man-page
  COMMENT "man page from fabscope --help")
add_custom_target(fabscope_man_page ALL DEPENDS ${FABSCOPE_MAN_PAGE})
install(FILES ${FABSCOPE_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# An Lmod module file with the prefix installed to: share/modulefiles/fabscope/VERSION.lua
# (`module use PREFIX/share/modulefiles; module load fabscope`).
install(CODE "
  set(FABSCOPE_VERSION \"${PROJECT_VERSION}\")
  set(PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(MANDIR \"${CMAKE_INSTALL_MANDIR}\")
  set(DATADIR \"${CMAKE_INSTALL_DATADIR}\")
  set(PYTHONDIR \"${FABSCOPE_PYTHON_DIR}\")
  configure_file(\"${CMAKE_CURRENT_SOURCE_DIR}/packaging/modules/fabscope.lua.in\"
                 \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/modulefiles/fabscope/${PROJECT_VERSION}.lua\" @ONLY)
  message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/modulefiles/fabscope/${PROJECT_VERSION}.lua\")")

# Packages: a .deb always, an .rpm where rpmbuild exists.
set(CPACK_PACKAGE_NAME fabscope)
set(CPACK_PACKAGE_VENDOR "fabscope")
set(CPACK_PACKAGE_CONTACT "fabscope maintainers <fabscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "is a GPU cluster's network fabric fit for LLM serving")
set(CPACK_PACKAGE_DESCRIPTION
    "Runs point-to-point, all-pairs, incast, collective, KV-cache, MoE, front-end and fault tests over MPI, UCX, verbs or NCCL, writes every rank's samples to one HDF5 file, and judges the fabric with its Python analysis.")
set(CPACK_RESOURCE_FILE_LICENSE "${CMAKE_CURRENT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
find_program(FABSCOPE_RPMBUILD rpmbuild)
if(FABSCOPE_RPMBUILD)
  list(APPEND CPACK_GENERATOR RPM)
endif()
# Libraries from dpkg-shlibdeps; what the scripts and the analysis run, by hand.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "openmpi-bin, python3, python3-numpy, python3-pandas, python3-h5py, python3-yaml, python3-scipy")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-matplotlib, chromium, slurm-client")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/prerm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)  # the build keeps its debug info; the package does not
set(CPACK_RPM_PACKAGE_REQUIRES "openmpi, python3, python3-numpy, python3-pandas, python3-h5py, python3-pyyaml, python3-scipy")
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "see /usr/share/doc/fabscope/LICENSE")
include(CPack)
