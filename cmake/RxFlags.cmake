# RxFlags.cmake — the language level, warnings and sanitizer switches every part of the
# build uses: included by the top-level CMakeLists.txt and by runtime/CMakeLists.txt when
# the runtime is configured on its own (device builds).
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

option(RX_WERROR "Treat warnings as errors" ON)
option(RX_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

add_compile_definitions(_POSIX_C_SOURCE=200809L)
add_compile_options(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                    -Wno-unused-parameter -fno-common)
if(RX_WERROR)
  add_compile_options(-Werror)
endif()
if(RX_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
