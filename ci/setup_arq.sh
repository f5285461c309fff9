#!/usr/bin/env bash
# Placeholder until targets/arq_redis lands: the arq adapter's virtualenv is built here.
exit 0
