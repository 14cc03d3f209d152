# Included after each project() of the llama.cpp build (CMAKE_PROJECT_INCLUDE, from
# scripts/llama_source.sh): once the whole tree is configured, compile llama.cpp's
# common library and the server's core as unity builds, as its own src/CMakeLists.txt
# already compiles libllama's model sources (UNITY_BUILD ON). Their files each parse the
# same large headers (nlohmann/json, the chat and argument parsers); batched, they
# compile in much less CPU time (scripts/bench_llama_build.sh) and the code is the same.
# The multimodal library is left alone: it does not compile as one unit.
if(PROJECT_NAME STREQUAL "llama.cpp")
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL
                 set_target_properties llama-common server-context PROPERTIES UNITY_BUILD ON)
endif()
