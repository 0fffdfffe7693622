"""The positive model of ``--allow``: the closed set of shell constructs a rule may approve.

:mod:`_policy._shell` reads a command against this set and nothing else. A tree-sitter node
or token that no construct here names makes the command *not static*: a person is asked, even
under ``--allow '*'``, including constructs the reader has never seen. The README's policy table
and ``docs/design.md`` carry :func:`markdown_table` verbatim (a test compares them), so what a
user reads is what the code does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Construct:
    name: str  # the first column of the table
    example: str  # a command that `--allow '*'` approves (a test reads each one)
    when: str  # the condition, in the table's words
    nodes: frozenset[str] = frozenset()  # tree-sitter node types the construct is made of
    tokens: frozenset[str] = frozenset()  # the unnamed tokens those nodes may hold


_WORD_NODES = frozenset({"word", "number", "string", "raw_string", "string_content"})
# Not `&>`, `&>>`, `|&`, `;&`, `;;&`: bash's alone. dash reads `echo hi &>f rm x` as `echo hi &`
# and `>f rm x`, so the reading (bash's grammar) and the run would differ.
_REDIRECT_TOKENS = frozenset({">", ">>", "<", ">&", "<&", ">|", ">&-", "<&-"})

MODEL: tuple[Construct, ...] = (
    Construct(
        "simple command",
        "git status --short 'a b'",
        "every word is literal once quotes are removed: no `$`, backquote, unquoted `*` `?` "
        "`[`, braces, `$'...'`, and no `!` bash could read as history; the program's name has "
        "no blank and no shell character in it (`'ls -l; rm x'` is one word: a program of that "
        "name). Matched as its words joined by spaces, with its redirections",
        _WORD_NODES | {"command", "command_name", "concatenation"},
        frozenset({'"'}),
    ),
    Construct(
        "redirection",
        "make > log 2>&1; { ls; } > f; > g",
        "always part of the text a rule must match: on a command (`make > log 2>&1`), on a "
        "group, subshell, loop or `if` (added to each command inside: `{ ls; } > f` is matched "
        "as `ls > f`), or alone (`> f` is a command of its own). One that writes a file (`>`, "
        "`>>`, `>|`, `>&f`, also after a here-document; not `/dev/null`, `2>&1`) only by a "
        "rule with a `>` in it (`make > *`) or by `*` alone: `echo *` does not approve "
        "`echo x > ~/.bashrc`. A target under `/dev` only when it is `/dev/null`, `/dev/zero`, "
        "`/dev/stdin`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/dev/random` or "
        "`/dev/urandom` (bash connects to the network for `< /dev/tcp/HOST/PORT`)",
        frozenset({"redirected_statement", "file_redirect", "file_descriptor"}),
        _REDIRECT_TOKENS,
    ),
    Construct(
        "here-document, here-string",
        "cat <<'EOF'\nhi\nEOF",
        "fed to a program that is not a shell or an interpreter; an unquoted body with `$` or "
        "a backquote is asked; a descriptor number must touch its operator (`0<<<`): bash's "
        "grammar in tree-sitter reads `sh 0<&0` as `sh 0`, so such a number is asked",
        frozenset({"heredoc_redirect", "herestring_redirect", "heredoc_start", "heredoc_body"})
        | {"heredoc_content", "heredoc_end"},
        frozenset({"<<", "<<-", "<<<"}),
    ),
    Construct(
        "pipeline, list",
        "ls | head -3 && echo ok || true; sleep 1 &",
        "each command matches: `|`, `;`, `&&`, `||`, `&`, newlines (not bash's `|&`, `&>`: "
        "dash reads them otherwise)",
        frozenset({"program", "pipeline", "list", "negated_command"}),
        frozenset({"|", ";", "&&", "||", "&", "!"}),
    ),
    Construct(
        "group, subshell",
        "(cd src && ls); { ls; }",
        "each command inside matches",
        frozenset({"subshell", "compound_statement"}),
        frozenset({"(", ")", "{", "}"}),
    ),
    Construct(
        "`if`, `while`, `until`, `case`",
        "if [ -f a ]; then ls; else echo no; fi; case a in a) ls;; esac",
        "each command inside matches, conditions too",
        frozenset({"if_statement", "elif_clause", "else_clause", "while_statement", "do_group"})
        | {"case_statement", "case_item"},
        frozenset({"if", "then", "elif", "else", "fi", "while", "until", "do", "done"})
        | {"case", "in", "esac", ";;", "|", "(", ")"},
    ),
    Construct(
        "`for` over literal words",
        "for f in a b; do echo $f; done",
        "read once per word, when `$f` is all the body does with the name",
        frozenset({"for_statement", "variable_name"}),
        frozenset({"for", "in", "do", "done", ";"}),
    ),
    Construct(
        "assignment",
        "LANG=C sort f; x=1",
        "a name a program sees (`NAME=v cmd`, `env`, `export`) only from the harmless list "
        "below; a shell variable may also be a lower-case name; never `PATH`, `IFS`, `HOME`, "
        "`LD_*`, `BASH_ENV` and the like; never an array element",
        frozenset({"variable_assignment", "variable_assignments"}),
        frozenset({"="}),
    ),
    Construct(
        "builtins that take names",
        "read -r line < f; printf -v out %s x; export LANG=C; test -v x",
        "`read`, `printf -v`, `declare`, `typeset`, `local`, `export`, `readonly`, `unset`, "
        "`test -v`, `wait -p` only with plain identifiers (bash evaluates `b[...]` as "
        "arithmetic)",
        frozenset({"declaration_command", "unset_command", "test_command"})
        | {"unary_expression", "binary_expression", "test_operator"},
        frozenset({"declare", "typeset", "export", "readonly", "local", "unset", "unsetenv"})
        | {"[", "]", "=", "==", "!=", "!"},
    ),
    Construct(
        "`set`",
        "set -euo pipefail",
        "only `-e -u -x -v -f -n -C`, `-o` with `errexit nounset xtrace verbose noglob noexec "
        "noclobber pipefail`, and their `+` forms",
    ),
    Construct(
        "wrappers",
        "env LANG=C sudo -u bob nice -n 5 ls",
        "`env`, `command`, `builtin`, `exec`, `nohup`, `nice`, `timeout`, `time`, `stdbuf`, "
        "`xargs`, `sudo`, `doas`, `setsid`: the wrapper's line and the wrapped command each "
        "match a rule (not `command`, `builtin`, `exec`); `env` and `sudo` read `NAME=value` "
        "operands as they do, and a name that is not an identifier is asked",
    ),
    Construct(
        "`sh -c` with a literal script",
        "bash -c 'make test'",
        "`sh`, `bash`, `dash`, `ash`, `posh`: the script is read the same way; any other shell "
        "(`zsh`, `rbash`, `ksh93`, a name ending in `sh`) is asked",
    ),
    Construct(
        "comment",
        "ls  # list",
        "ignored",
        frozenset({"comment"}),
    ),
    Construct(
        "anything else",
        "",
        "asked, even under `--allow '*'`: `$VAR`, `$(...)`, functions, `eval`, `source`, "
        "`[[ ]]`, `(( ))`, `let`, `set -H`, `jobs -x`, a shell fed its input, an interpreter fed "
        "its input, `a[...]` names, a word tree-sitter splits (`''\\rm`), `<` or `>` in "
        "`[ ]`, and any construct not in this table",
    ),
)

#: Every node type a rule may approve; any other makes a command not static.
NODES = frozenset().union(*(c.nodes for c in MODEL))
#: Every unnamed token those nodes may hold outside words.
TOKENS = frozenset().union(*(c.tokens for c in MODEL))
#: The only `set` (and ``sh -o``) options a rule may approve.
SET_FLAGS = frozenset("euxvfnC")
SET_NAMES = frozenset(
    {"errexit", "nounset", "xtrace", "verbose", "noglob", "noexec", "noclobber", "pipefail"}
)
#: The only letters a shell's own options may hold in `sh -c` (``-c`` and the `set` flags).
SHELL_FLAGS = SET_FLAGS | {"c"}


def markdown_table() -> str:
    """The table the README and ``docs/design.md`` carry, verbatim."""
    lines = ["| construct | for example | a rule may approve it when |", "|---|---|---|"]
    for construct in MODEL:
        example = construct.example.replace("\n", "⏎").replace("|", "\\|")
        cell = f"`{example}`" if example else ""
        when = construct.when.replace("|", "\\|")
        lines.append(f"| {construct.name} | {cell} | {when} |")
    return "\n".join(lines)
