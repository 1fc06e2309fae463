#!/bin/sh
# deps.sh — installs the Debian packages evtc needs (C compiler, make,
# cmocka for the tests, cJSON, and PCRE2 and utf8proc for the tokenizer),
# only if something is missing.
missing=""
command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
command -v make >/dev/null 2>&1 || missing="$missing make"
[ -f /usr/include/cmocka.h ] || missing="$missing libcmocka-dev"
[ -f /usr/include/cjson/cJSON.h ] || missing="$missing libcjson-dev"
[ -f /usr/include/pcre2.h ] || missing="$missing libpcre2-dev"
[ -f /usr/include/utf8proc.h ] || missing="$missing libutf8proc-dev"
[ -n "$missing" ] || exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq $missing >/dev/null || {
    echo "deps: could not install$missing (apt-get failed); install them and retry" >&2
    exit 1
}
