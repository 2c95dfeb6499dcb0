# peers.cmake - the peer table and adapters (harness/peers/peer.h): with
# NS_PEERS ON, each adapter is built when its library is found, and the ones
# missing are recorded with the package that brings them. With NS_PEERS OFF
# (the sanitizer presets keep the C++ libraries out) the table is empty.
set(_peer_dir ${PROJECT_SOURCE_DIR}/harness/peers)
add_library(nsb_peers STATIC ${_peer_dir}/peers.c)
set_target_properties(nsb_peers PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF CXX_STANDARD 17
                      CXX_EXTENSIONS OFF)
target_include_directories(nsb_peers PUBLIC ${_peer_dir})
target_link_libraries(nsb_peers PUBLIC nsearch nsearch_flags)
if(NOT NS_PEERS)
  set(_missing "all (built with NS_PEERS=OFF)")
  target_compile_definitions(nsb_peers PRIVATE NSB_PEERS_MISSING="${_missing}")
  return()
endif()
find_package(OpenMP REQUIRED COMPONENTS CXX)
target_link_libraries(nsb_peers PUBLIC OpenMP::OpenMP_CXX)
set(_missing "")

# One adapter: with its library found, harness/peers/NAME.cpp linked to
# TARGET ("none": the adapter links nothing) with the compile definitions
# that follow; else NAME (PACKAGES) joins the missing.
macro(nsb_peer found name packages target)
  if(${found})
    target_sources(nsb_peers PRIVATE ${_peer_dir}/${name}.cpp)
    if(NOT "${target}" STREQUAL "none")
      target_link_libraries(nsb_peers PRIVATE ${target})
    endif()
    target_compile_definitions(nsb_peers PRIVATE ${ARGN})
  else()
    list(APPEND _missing "${name} (${packages})")
  endif()
endmacro()

find_package(nanoflann QUIET)
nsb_peer(nanoflann_FOUND nanoflann_kdtree libnanoflann-dev nanoflann::nanoflann
         NSB_HAVE_NANOFLANN NSB_NANOFLANN_VERSION="${nanoflann_VERSION}")

# (Boost 1.74's geometry includes headers it has itself deprecated.)
find_package(Boost 1.70 QUIET)
nsb_peer(Boost_FOUND boost_rtree libboost-dev Boost::headers NSB_HAVE_BOOST_GEOMETRY
         NSB_BOOST_VERSION="${Boost_VERSION_STRING}" BOOST_ALLOW_DEPRECATED_HEADERS)

set(CGAL_DO_NOT_WARN_ABOUT_CMAKE_BUILD_TYPE TRUE)
# CGAL's package declares option(BUILD_TESTING ... OFF): left in the cache, it
# would turn the project's tests off on a fresh configure (include(CTest)
# keeps a cached value). Undo it unless the user set BUILD_TESTING.
if(DEFINED CACHE{BUILD_TESTING})
  set(_testing_was_set TRUE)
else()
  set(_testing_was_set FALSE)
endif()
find_package(CGAL QUIET)
if(NOT _testing_was_set)
  unset(BUILD_TESTING CACHE)
  unset(BUILD_TESTING)
endif()
nsb_peer(CGAL_FOUND cgal_box_intersection libcgal-dev CGAL::CGAL NSB_HAVE_CGAL
         NSB_CGAL_VERSION="${CGAL_VERSION}")

# scipy through an embedded interpreter: Debian's python3 (which has Debian's
# numpy and scipy; pyenv's, say, may come first on PATH and lack them).
if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 QUIET COMPONENTS Interpreter Development.Embed)
set(_scipy_version "")
if(Python3_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, scipy; print(scipy.__version__)"
                  OUTPUT_VARIABLE _scipy_version OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _scipy_rc ERROR_QUIET)
  if(NOT _scipy_rc EQUAL 0)
    set(_scipy_version "")
  endif()
endif()
set(_scipy_found FALSE)
if(_scipy_version)
  set(_scipy_found TRUE)
endif()
nsb_peer(_scipy_found scipy_ckdtree "python3-scipy, libpython3-dev" Python3::Python NSB_HAVE_SCIPY
         NSB_SCIPY_VERSION="${_scipy_version}")

# LAMMPS (two peers from one adapter) runs in a process of its own,
# nsb-lammps (lammps_neighbor.cpp says why); its package needs MPI's.
find_package(LAMMPS QUIET)
if(LAMMPS_FOUND)
  add_executable(nsb-lammps ${_peer_dir}/lammps_server.c)
  set_target_properties(nsb-lammps PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
  target_compile_definitions(nsb-lammps PRIVATE _GNU_SOURCE)
  target_link_libraries(nsb-lammps PRIVATE LAMMPS::lammps nsearch_flags)
  add_dependencies(nsb_peers nsb-lammps)
endif()
nsb_peer(LAMMPS_FOUND lammps_neighbor liblammps-dev none NSB_HAVE_LAMMPS
         NSB_LAMMPS_VERSION="${LAMMPS_VERSION}" NSB_LAMMPS_SERVER="$<TARGET_FILE:nsb-lammps>")
if(NOT LAMMPS_FOUND)
  list(APPEND _missing "lammps_neighbor_sorted (liblammps-dev)")
endif()

list(JOIN _missing ", " _missing)
target_compile_definitions(nsb_peers PRIVATE NSB_PEERS_MISSING="${_missing}")
message(STATUS "peers missing: ${_missing}")
