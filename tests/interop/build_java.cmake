# Builds tests/interop/java with Maven into the build tree (cmake -P script, run by a custom
# command) against one version of the official Java client. Tries offline first (-o: the local
# repository already holds every artifact, no network), then online. Arguments: -DMVN=<mvn>
# -DPOM=<pom.xml> -DOUT=<build dir, one per version> -DLOG=<log> -DVERSION=<rocketmq-client
# version, the pom's rocketmq.version>.
foreach(v MVN POM OUT LOG VERSION)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "build_java.cmake: ${v} not set")
  endif()
endforeach()
set(args -q -B -f ${POM} package -DbuildDirectory=${OUT} -Drocketmq.version=${VERSION})
execute_process(COMMAND ${MVN} -o ${args} RESULT_VARIABLE rc OUTPUT_FILE ${LOG} ERROR_FILE ${LOG})
if(NOT rc EQUAL 0)
  message(STATUS "interop: offline Maven build (client ${VERSION}) failed (artifacts missing?), "
                 "retrying online")
  execute_process(COMMAND ${MVN} ${args} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "interop: mvn package (client ${VERSION}) failed (exit ${rc})")
  endif()
endif()
if(NOT EXISTS ${OUT}/ferry-rmq-interop.jar)
  message(FATAL_ERROR "interop: ${OUT}/ferry-rmq-interop.jar missing after mvn")
endif()
# lib/ must hold exactly this client (a directory reused for another version would mix them).
file(GLOB clients ${OUT}/lib/rocketmq-client-*.jar)
if(NOT clients STREQUAL "${OUT}/lib/rocketmq-client-${VERSION}.jar")
  message(FATAL_ERROR "interop: ${OUT}/lib holds ${clients}, expected rocketmq-client-${VERSION}.jar")
endif()
