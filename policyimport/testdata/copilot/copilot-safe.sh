#!/bin/sh
# A wrapper the owner runs instead of copilot.
exec copilot --allow-tool 'shell(git:*)' --deny-tool 'shell(git push)' \
  --allow-tool 'shell(npm test),write' --deny-tool=My-MCP-Server "$@"
alias cop='copilot --allow-all-tools --deny-tool "shell(rm)"'
