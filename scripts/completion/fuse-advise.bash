# bash completion for fuse-advise: verbs from `fuse-advise --help`, each verb's options from
# `fuse-advise VERB --help`, so it completes exactly what the installed binary parses.
# Installed to share/bash-completion/completions/fuse-advise (docs/install.md).
_fuse_advise()
{
    local cur prev words cword
    _init_completion 2>/dev/null || {
        cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    }
    local bin=${words[0]}
    if [ "$cword" -eq 1 ]; then
        local verbs
        verbs=$("$bin" --help 2>/dev/null | awk '/^verbs:/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {exit}')
        COMPREPLY=($(compgen -W "$verbs --help --version" -- "$cur"))
        return
    fi
    local verb=${words[1]}
    case $prev in
        --db|--baseline-db|--candidate-db|--out|-o|--junit|--markdown|--inputs|--outputs|--to)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$("$bin" "$verb" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
        COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
        return
    fi
    case $verb in
        run|inspect|exec|apply)
            COMPREPLY=($(compgen -f -X '!*.@(onnx|json|gz|sqlite)' -- "$cur"))
            [[ $cur == z* ]] && COMPREPLY+=($(compgen -W "$("$bin" zoo 2>/dev/null | awk 'NR > 0 && /^[a-z]/ {print "zoo:" $1}')" -- "$cur"))
            compopt -o filenames 2>/dev/null ;;
        import) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null ;;
    esac
}
complete -F _fuse_advise fuse-advise
