//! Random specs → forge → mdfkit → every value back exactly.

mod common;

use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
use proptest::prelude::*;

fn col_type() -> impl Strategy<Value = ColType> {
    use ColType::*;
    prop_oneof![
        Just(TinyInt),
        Just(SmallInt),
        Just(Int),
        Just(BigInt),
        Just(Bit),
        (1u8..=38).prop_flat_map(|p| (Just(p), 0..=p)).prop_map(|(p, s)| Decimal(p, s)),
        (1u8..=38).prop_flat_map(|p| (Just(p), 0..=p)).prop_map(|(p, s)| Numeric(p, s)),
        Just(Money),
        Just(SmallMoney),
        Just(Real),
        Just(Float),
        Just(Date),
        (0u8..=7).prop_map(Time),
        (0u8..=7).prop_map(DateTime2),
        (0u8..=7).prop_map(DateTimeOffset),
        Just(DateTime),
        Just(SmallDateTime),
        (1u16..=40).prop_map(Char),
        prop::option::of(1u16..=3000).prop_map(VarChar),
        (1u16..=20).prop_map(NChar),
        prop::option::of(1u16..=2000).prop_map(NVarChar),
        (1u16..=30).prop_map(Binary),
        prop::option::of(1u16..=4000).prop_map(VarBinary),
        Just(UniqueIdentifier),
    ]
}

fn nulls() -> impl Strategy<Value = Nulls> {
    prop_oneof![
        Just(Nulls::Never),
        (1u64..6).prop_map(Nulls::Every),
        (0.0f64..1.0).prop_map(Nulls::Random),
        Just(Nulls::Always)
    ]
}

fn column(i: usize) -> impl Strategy<Value = ColumnSpec> {
    (col_type(), nulls(), prop::bool::ANY, 0usize..20_000, prop::bool::ANY).prop_map(
        move |(ty, nulls, long, max, sparse)| {
            let gen = if ty.is_max() && long { Gen::Length { min: 0, max } } else { Gen::Random };
            let c = ColumnSpec::new(&format!("c{i}"), ty, gen, nulls);
            // Sparse where SQL Server allows it (nullable); (max) values are not forged sparse.
            if sparse && nulls != Nulls::Never && !ty.is_max() {
                c.sparse()
            } else {
                c
            }
        },
    )
}

fn table(i: usize) -> impl Strategy<Value = TableSpec> {
    (
        prop::collection::vec(0..1usize, 1..12)
            .prop_flat_map(|v| v.iter().enumerate().map(|(k, _)| column(k)).collect::<Vec<_>>()),
        prop::bool::ANY,
        0u64..400,
        prop::option::of(2u64..9),
        prop::option::of(2u64..9),
        prop::option::of((1usize..12, 0u64..400)),
    )
        .prop_map(move |(mut columns, clustered, rows, ghosts, forwards, added)| {
            let layout = if clustered {
                columns
                    .insert(0, ColumnSpec::new("k", ColType::Int, Gen::Sequence { start: -7, step: 2 }, Nulls::Never));
                Layout::Clustered { key: 0 }
            } else {
                Layout::Heap
            };
            // Keep the fixed part within a record.
            let mut fixed = 0;
            columns.retain(|c| {
                fixed += c.ty.fixed_len().unwrap_or(0);
                fixed <= 4000
            });
            let mut t = TableSpec::new("dbo", &format!("t{i}"), layout, rows);
            t.columns = columns;
            t.ghost_every = ghosts;
            t.forward_every = if clustered { None } else { forwards };
            // Columns added after some rows were written: nullable ones read NULL there, NOT
            // NULL ones a stored default (the value row 0 has).
            if let Some((first, before)) = added {
                let first = first.min(t.columns.len().saturating_sub(1)).max(1);
                if first < t.columns.len() {
                    t.added_after = Some((first, before));
                    for c in &mut t.columns[first..] {
                        if c.nulls == Nulls::Never && !c.ty.is_max() {
                            c.default = mdfkit_forge::value::generate(c, 1, 0, 0);
                        } else if c.nulls == Nulls::Never {
                            c.nulls = Nulls::Every(2);
                        }
                    }
                }
            }
            t
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    (prop::collection::vec(0..1usize, 1..4), any::<u64>(), prop::bool::ANY, 1u16..3).prop_flat_map(
        |(n, seed, v904, files)| {
            let tables: Vec<_> = (0..n.len()).map(table).collect();
            tables.prop_map(move |tables| {
                let mut s = Spec::new("prop", if v904 { Version::V904 } else { Version::V852 }, seed);
                s.data_files = files;
                s.tables = tables;
                s
            })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_specs_round_trip(spec in spec()) {
        common::assert_round_trip(&spec);
    }
}
