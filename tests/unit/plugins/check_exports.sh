#!/bin/sh
# Fails unless each plugin given exports cairn_plugin_entry and no other
# symbol of its own (linker-provided markers aside).
status=0
for plugin in "$@"; do
    symbols=$(nm -D --defined-only "$plugin" | awk '{print $3}' |
              grep -v -x -e _init -e _fini -e __bss_start -e _edata -e _end)
    if [ "$symbols" != "cairn_plugin_entry" ]; then
        echo "$plugin exports: $(echo $symbols | tr '\n' ' ') (want only cairn_plugin_entry)" >&2
        status=1
    else
        echo "$plugin: only cairn_plugin_entry"
    fi
done
exit $status
