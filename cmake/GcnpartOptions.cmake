# Warnings and sanitizers for our own targets only (never global flags that leak to consumers).
add_library(gcnpart_options INTERFACE)
add_library(gcnpart::options ALIAS gcnpart_options)
target_compile_features(gcnpart_options INTERFACE cxx_std_20)
target_compile_options(gcnpart_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-restrict>
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --extended-lambda -Xcompiler=-Wall>)
if(GCNPART_SANITIZE)
  target_compile_options(gcnpart_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(gcnpart_options INTERFACE -fsanitize=address,undefined)
  target_compile_definitions(gcnpart_options INTERFACE GCNPART_SANITIZED=1)
endif()
