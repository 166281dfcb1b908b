//! No import cycle between the core crate's top-level modules (issue 13): each layer names only
//! the layers below it, and this test fails on any cycle.
//!
//! The graph is read from the sources: module `a` depends on `b` when a file of `a` (`src/a.rs` or
//! `src/a/**`) names `crate::b` (a `use` line, a grouped `use crate::{b, c::d}`, or a path in code)
//! or a name `lib.rs` re-exports from `b` (`crate::Error` is `error`). Comments, `#[cfg(test)] mod`
//! blocks and `tests.rs` files are left out: test code may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn module_graph_has_no_cycle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    for layer in ["error", "page", "record", "backup", "catalog", "database"] {
        assert!(graph.contains_key(layer), "module `{layer}` not found among {:?}", graph.keys());
    }
    assert!(graph["database"].contains("catalog"), "the graph misses `database` → `catalog`: {graph:?}");
    let cycles: Vec<String> =
        strongly_connected_components(&graph).iter().map(|cycle| describe_cycle(&graph, cycle)).collect();
    assert!(
        cycles.is_empty(),
        "import cycles between modules (move the knowledge to the layer it belongs to): {cycles:#?}"
    );
}

#[test]
fn the_check_finds_a_cycle_and_the_edges_in_it() {
    let code = "use crate::page::PageId;\nlet e = crate::{error::Error, value};\n// crate::catalog in a comment\n";
    let heads = crate_path_heads(&without_comments(code));
    assert_eq!(heads.into_iter().collect::<Vec<_>>(), ["error", "page", "value"]);
    let edges = [("error", "page"), ("page", "record"), ("record", "error"), ("catalog", "page")];
    let mut graph = Graph::new();
    for (from, to) in edges {
        graph.entry(from.to_string()).or_default().insert(to.to_string());
        graph.entry(to.to_string()).or_default();
    }
    let cycles = strongly_connected_components(&graph);
    assert_eq!(cycles, [["error", "page", "record"]]);
    assert_eq!(
        describe_cycle(&graph, &cycles[0]),
        "error, page, record: error -> page, page -> record, record -> error"
    );
}

/// Top-level module → the other top-level modules its non-test code names.
fn module_graph(src: &Path) -> Graph {
    let reexports = lib_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_str().unwrap();
        if first == "lib.rs" || relative.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let module = first.trim_end_matches(".rs").to_string();
        let code = without_test_modules(&without_comments(&std::fs::read_to_string(&file).unwrap()));
        let uses = graph.entry(module.clone()).or_default();
        for name in crate_path_heads(&code) {
            let target = reexports.get(&name).cloned().unwrap_or(name);
            if target != module {
                uses.insert(target);
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for uses in graph.values_mut() {
        uses.retain(|target| modules.contains(target));
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// `pub use error::{Error, Result};` in `lib.rs` → `Error` and `Result` belong to `error`, and
/// `pub use scans::split::ScanSplit;` → `ScanSplit` to `scans` (crate-private re-exports alike).
/// A name re-exported from a re-export (`pub use scan::Flow` where `scan` is `catalog::scan`)
/// belongs where that one does.
fn lib_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut reexports = BTreeMap::new();
    for line in lib.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("pub use ").or_else(|| line.strip_prefix("pub(crate) use ")) else {
            continue;
        };
        let Some((module, path)) = rest.trim_end_matches(';').split_once("::") else { continue };
        let names = match path.find('{') {
            Some(open) => path[open + 1..].trim_end_matches('}'),
            None => path.rsplit("::").next().unwrap_or(path),
        };
        for name in names.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            reexports.insert(name.to_string(), module.to_string());
        }
    }
    let direct = reexports.clone();
    for module in reexports.values_mut() {
        // Each step follows one `pub use`; there are fewer steps than re-exports.
        for _ in 0..direct.len() {
            match direct.get(module.as_str()) {
                Some(next) if next != module => *module = next.clone(),
                _ => break,
            }
        }
    }
    reexports
}

/// Drops `//` comments (doc comments included), leaving string literals that contain `//` alone
/// only as far as a line-based cut can: a `crate::` path inside a string is not expected.
fn without_comments(source: &str) -> String {
    source.lines().map(|line| line.split_once("//").map_or(line, |(code, _)| code)).collect::<Vec<_>>().join("\n")
}

/// Drops each `#[cfg(test)]` item that is a `mod` block, by counting braces from its `{`.
fn without_test_modules(code: &str) -> String {
    let mut kept = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let is_mod_block = after.trim_start().starts_with("mod ")
            && after.find('{').is_some_and(|brace| after.find(';').is_none_or(|semi| brace < semi));
        if !is_mod_block {
            rest = after;
            continue;
        }
        let open = after.find('{').unwrap();
        let mut depth = 0;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    kept.push_str(rest);
    kept
}

/// The first segment after each `crate::`, and each head of a grouped `crate::{a, b::c}`.
fn crate_path_heads(code: &str) -> BTreeSet<String> {
    let mut heads = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let preceded_by_identifier =
            code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if preceded_by_identifier {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            heads.extend(group_heads(group));
        } else {
            heads.insert(identifier_at(rest));
        }
    }
    heads.retain(|head| !head.is_empty());
    heads
}

/// Heads of the items of a `{...}` group (nested groups belong to their head).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                heads.push(identifier_at(&group[i..]));
                item_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn identifier_at(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// Tarjan's algorithm; only components of more than one module (cycles), each sorted.
fn strongly_connected_components(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, module: &'a str) {
            let index = self.index.len();
            self.index.insert(module, index);
            self.low.insert(module, index);
            self.stack.push(module);
            self.on_stack.insert(module);
            for target in &self.graph[module] {
                let target = target.as_str();
                if !self.index.contains_key(target) {
                    self.visit(target);
                    self.low.insert(module, self.low[module].min(self.low[target]));
                } else if self.on_stack.contains(target) {
                    self.low.insert(module, self.low[module].min(self.index[target]));
                }
            }
            if self.low[module] == self.index[module] {
                let mut component = Vec::new();
                loop {
                    let member = self.stack.pop().unwrap();
                    self.on_stack.remove(member);
                    component.push(member.to_string());
                    if member == module {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.components.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for module in graph.keys() {
        if !tarjan.index.contains_key(module.as_str()) {
            tarjan.visit(module);
        }
    }
    tarjan.components.sort();
    tarjan.components
}

/// A component and the edges inside it, e.g. `decode, xmlbin: decode -> xmlbin, xmlbin -> decode`.
fn describe_cycle(graph: &Graph, component: &[String]) -> String {
    let edges: Vec<String> = component
        .iter()
        .flat_map(|from| {
            graph[from].iter().filter(|to| component.contains(to)).map(move |to| format!("{from} -> {to}"))
        })
        .collect();
    format!("{}: {}", component.join(", "), edges.join(", "))
}
