#!/bin/sh
# SPDX-License-Identifier: MIT
# Generates configure and Makefile.in from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf -fi
