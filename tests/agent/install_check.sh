#!/bin/sh
# install_check.sh BUILD_DIR SOURCE_DIR CC [EXTRA_FLAGS]: install castor into a temporary prefix,
# then build tests/agent/install_consumer.c outside the tree with pkg-config's flags for castor
# (and the header alone as C++), and run it against the installed library.
set -eu
build=$1
source=$2
cc=$3
extra=${4:-}
prefix=$(mktemp -d /tmp/castor-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name castor.pc)
[ -n "$pc" ] || { echo "install_check: no castor.pc installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")"
cflags=$(pkg-config --cflags castor)
libs=$(pkg-config --libs castor)
libdir=$(pkg-config --variable=libdir castor)
[ -f "$libdir/libcastor.so" ] || { echo "install_check: libcastor.so not in $libdir"; exit 1; }
[ -f "$(pkg-config --variable=includedir castor)/castor/castor.h" ] ||
    { echo "install_check: castor/castor.h not installed"; exit 1; }
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic $extra $cflags \
    "$source/tests/agent/install_consumer.c" -o "$prefix/consumer" $libs -lm -Wl,-rpath,"$libdir"
if command -v c++ >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    echo '#include <castor/castor.h>
int main() { return castor_version() == 0; }' | c++ -x c++ -Wall -Werror -fsyntax-only $cflags -
fi
"$prefix/consumer"
