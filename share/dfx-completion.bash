# bash completion for dfx-coordinator, dfx-rank-agent, dfx-view and
# dfx-gen-program (installed to share/bash-completion/completions/ under each
# name). The words come from the program's own --help — its subcommands, and
# the flags of the subcommand being typed — so they cannot drift from it.
_dfx_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} subs sub="" i
  subs=$("$prog" --help 2>/dev/null | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ -n $subs ]] && grep -qxF -- "${COMP_WORDS[i]}" <<<"$subs"; then
      sub=${COMP_WORDS[i]}
      break
    fi
  done
  if [[ $cur == -* ]]; then
    local flags
    flags=$("$prog" ${sub:+"$sub"} --help 2>/dev/null | grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
  elif [[ -z $sub && -n $subs ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}
complete -o filenames -F _dfx_complete dfx-coordinator dfx-rank-agent dfx-view dfx-gen-program
