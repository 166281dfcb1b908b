//! geometry and geography values ([MS-SSCLRT] 2.1) to OGC Well-Known Binary and to the
//! Well-Known Text SQL Server's `ToString()` prints.
//!
//! # Stored form ([MS-SSCLRT] 2.1.1 version 1, 2.1.2 version 2; all integers little endian)
//!
//! ```text
//!  | SRID (4, signed) | Version (1): 1 or 2 | SerializationProps (1) |
//!  | NumPoints (4)    |  - absent when P or L is set (1 or 2 points)
//!  | Points: NumPoints × (2 × f64)  geometry: x, y;  geography: latitude, longitude
//!  | Z values: NumPoints × f64      (when Z is set)
//!  | M values: NumPoints × f64      (when M is set)
//!  | NumFigures (4) | Figures: NumFigures × (attribute (1), first point (4))   - absent with P / L
//!  | NumShapes (4)  | Shapes: NumShapes × (parent shape (4), first figure (4), type (1)) - same
//!  | NumSegments (4) | Segments: NumSegments × type (1)   - version 2, when figures of type 3 exist
//! ```
//!
//! | SerializationProps bit | meaning                                                         |
//! |-----------------------:|-----------------------------------------------------------------|
//! | 0x01 Z                 | Z values present                                                |
//! | 0x02 M                 | M values present                                                |
//! | 0x04 V                 | valid                                                           |
//! | 0x08 P                 | a single point: one point, no counts, figures or shapes         |
//! | 0x10 L                 | a single line segment: two points, no counts, figures or shapes |
//! | 0x20 H                 | (version 2, geography) larger than a hemisphere                 |
//!
//! Figures (2.1.3) are runs of points: figure i holds points `[first_i, first_{i+1})` (the last
//! up to NumPoints). Attribute, version 1: 0 interior ring, 1 stroke, 2 exterior ring; version 2:
//! 0 none, 1 line, 2 arc (a circular string), 3 composite curve (its segments are in the segment
//! list). Shapes (2.1.4) form a tree in pre-order: the first shape is the root (parent -1); a
//! shape's figures run from its first figure to the next shape's (-1 = no figures, an EMPTY).
//! Shape types: 1 Point, 2 LineString, 3 Polygon, 4 MultiPoint, 5 MultiLineString,
//! 6 MultiPolygon, 7 GeometryCollection, version 2 also 8 CircularString, 9 CompoundCurve,
//! 10 CurvePolygon, 11 FullGlobe. Segments (2.1.7), consumed in figure order by the figures of
//! attribute 3: 0 line, 1 arc, 2 first line, 3 first arc ("first" starts a new part of the
//! compound curve); a line segment takes one more point, an arc two.
//!
//! # Outputs
//! - WKB: ISO/OGC Well-Known Binary, little endian; Z, M and ZM as type + 1000 / 2000 / 3000;
//!   curve types as ISO 8 / 9 / 10 (compound curve parts and curve polygon rings are nested WKB
//!   geometries). An empty point is written with NaN coordinates (the PostGIS / GEOS convention).
//!   Geography points are written x = longitude, y = latitude, as WKB and WKT require.
//!   FULLGLOBE has no WKB: it is refused with an `Unsupported` error.
//! - WKT: as `ToString()` prints: `POINT (1 2)`, `MULTIPOINT ((1 2), (3 4))`, `POINT EMPTY`,
//!   `COMPOUNDCURVE ((0 0, 1 1), CIRCULARSTRING (1 1, 2 0, 3 1))`; Z and M follow x y, and a
//!   missing Z (NaN) is written NULL (`POINT (1 2 NULL 4)`). Numbers: the shortest text that
//!   reads back to the same double (`-122.349`), with .NET's exponent form outside
//!   1e-5 ≤ |v| < 1e15 (`1E+15`), -0 as 0. SQL Server's own number formatting was not
//!   available to compare (unverified: it may print 16-17 digit values differently).
//!
//! Sources: [MS-SSCLRT] 2.1 (structure, flags, figure, shape and segment values, as also
//! listed in the comments of QGIS's `qgsmssqlgeometryparser.cpp`). The spec pages' own example
//! bytes were not available here; instead the tests use stored values found in public SQL
//! scripts: `0xE6100000010C00000000006044408FC2F5285C7F52C0`, published as the result of
//! `STGeomFromText('POINT(-73.99 40.75)', 4326)` (so geography stores latitude first), and a
//! single-segment linestring and a polygon whose WKT was derived here (not published with them).
//! No corpus file has a geometry or geography column, so no stored value was checked end to end.

use std::ops::Range;

use crate::bytes::{read_i32, read_u32};
use crate::error::{Error, Result};

const PROP_Z: u8 = 0x01;
const PROP_M: u8 = 0x02;
const PROP_SINGLE_POINT: u8 = 0x08;
const PROP_SINGLE_LINE: u8 = 0x10;

/// Nesting deeper than this (collections of collections ...) is refused rather than recursed.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShapeType {
    Point = 1,
    LineString = 2,
    Polygon = 3,
    MultiPoint = 4,
    MultiLineString = 5,
    MultiPolygon = 6,
    GeometryCollection = 7,
    CircularString = 8,
    CompoundCurve = 9,
    CurvePolygon = 10,
    FullGlobe = 11,
}

impl ShapeType {
    fn from_u8(v: u8, version: u8) -> Option<Self> {
        use ShapeType::*;
        let t = match v {
            1 => Point,
            2 => LineString,
            3 => Polygon,
            4 => MultiPoint,
            5 => MultiLineString,
            6 => MultiPolygon,
            7 => GeometryCollection,
            8 => CircularString,
            9 => CompoundCurve,
            10 => CurvePolygon,
            11 => FullGlobe,
            _ => return None,
        };
        (version >= 2 || v <= 7).then_some(t)
    }

    fn wkt_name(self) -> &'static str {
        use ShapeType::*;
        match self {
            Point => "POINT",
            LineString => "LINESTRING",
            Polygon => "POLYGON",
            MultiPoint => "MULTIPOINT",
            MultiLineString => "MULTILINESTRING",
            MultiPolygon => "MULTIPOLYGON",
            GeometryCollection => "GEOMETRYCOLLECTION",
            CircularString => "CIRCULARSTRING",
            CompoundCurve => "COMPOUNDCURVE",
            CurvePolygon => "CURVEPOLYGON",
            FullGlobe => "FULLGLOBE",
        }
    }
}

/// A decoded value: coordinates (x, y order) and the shape tree over them.
#[derive(Debug)]
pub struct Spatial {
    /// The spatial reference id (4326 for WGS 84; 0 for geometry with none).
    pub srid: i32,
    xy: Vec<[f64; 2]>,
    z: Option<Vec<f64>>,
    m: Option<Vec<f64>>,
    root: Geom,
}

/// A run of curve: points `range` joined by straight lines or by circular arcs.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Line(Range<usize>),
    Arc(Range<usize>),
}

/// A ring of a curve polygon.
#[derive(Debug, Clone, PartialEq)]
enum Ring {
    Part(Part),
    Compound(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq)]
enum Geom {
    Point(Option<usize>),
    LineString(Range<usize>),
    Polygon(Vec<Range<usize>>),
    CircularString(Range<usize>),
    CompoundCurve(Vec<Part>),
    CurvePolygon(Vec<Ring>),
    /// MultiPoint, MultiLineString, MultiPolygon or GeometryCollection.
    Collection(ShapeType, Vec<Geom>),
    FullGlobe,
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bad(&self, what: &str) -> Error {
        Error::corrupt(format!("spatial value of {} bytes: {what} at byte {}", self.bytes.len(), self.pos))
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| self.bad(what))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        let b = self.take(4, what)?;
        read_i32(b, 0).ok_or_else(|| self.bad(what))
    }

    /// A count of items of `size` bytes each, checked against the bytes that are left.
    fn count(&mut self, size: usize, what: &str) -> Result<usize> {
        let b = self.take(4, what)?;
        let n = read_u32(b, 0).ok_or_else(|| self.bad(what))? as usize;
        match n.checked_mul(size) {
            Some(total) if total <= self.bytes.len() - self.pos => Ok(n),
            _ => Err(self.bad(&format!("{what} {n} larger than the value"))),
        }
    }

    fn f64s(&mut self, n: usize, what: &str) -> Result<Vec<f64>> {
        let b = self.take(n.checked_mul(8).ok_or_else(|| self.bad(what))?, what)?;
        Ok(b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default())).collect())
    }
}

struct Figure {
    attribute: u8,
    points: Range<usize>,
}

struct Shape {
    parent: i32,
    figures: Range<usize>,
    kind: ShapeType,
    children: Vec<usize>,
}

/// Parses a stored geometry (`geography` false) or geography value.
pub fn parse(bytes: &[u8], geography: bool) -> Result<Spatial> {
    let mut r = Reader { bytes, pos: 0 };
    let srid = r.i32("SRID")?;
    let version = r.u8("version")?;
    if !(1..=2).contains(&version) {
        return Err(Error::unsupported(format!("spatial serialization version {version}")));
    }
    let props = r.u8("serialization properties")?;
    let single = props & (PROP_SINGLE_POINT | PROP_SINGLE_LINE);
    let n_points = match single {
        0 => r.count(16, "number of points")?,
        PROP_SINGLE_POINT => 1,
        PROP_SINGLE_LINE => 2,
        _ => return Err(r.bad("both single point and single line segment set")),
    };
    let raw = r.f64s(n_points * 2, "points")?;
    let xy: Vec<[f64; 2]> = raw.chunks_exact(2).map(|p| if geography { [p[1], p[0]] } else { [p[0], p[1]] }).collect();
    let z = if props & PROP_Z != 0 { Some(r.f64s(n_points, "Z values")?) } else { None };
    let m = if props & PROP_M != 0 { Some(r.f64s(n_points, "M values")?) } else { None };

    let (figures, mut shapes, segments) = if single != 0 {
        let kind = if single == PROP_SINGLE_POINT { ShapeType::Point } else { ShapeType::LineString };
        let figures = vec![Figure { attribute: 1, points: 0..n_points }];
        (figures, vec![Shape { parent: -1, figures: 0..1, kind, children: Vec::new() }], Vec::new())
    } else {
        let n_figures = r.count(5, "number of figures")?;
        let mut starts = Vec::with_capacity(n_figures);
        for _ in 0..n_figures {
            let attribute = r.u8("figure attribute")?;
            let first = r.i32("figure point offset")?;
            starts.push((attribute, first));
        }
        let mut figures = Vec::with_capacity(n_figures);
        for (i, &(attribute, first)) in starts.iter().enumerate() {
            let end = starts.get(i + 1).map_or(n_points as i64, |&(_, next)| i64::from(next));
            let first = i64::from(first);
            if first < 0 || first > end || end > n_points as i64 {
                return Err(r.bad(&format!("figure {i} points {first}..{end} of {n_points}")));
            }
            figures.push(Figure { attribute, points: first as usize..end as usize });
        }
        let n_shapes = r.count(9, "number of shapes")?;
        let mut raw_shapes = Vec::with_capacity(n_shapes);
        for _ in 0..n_shapes {
            let parent = r.i32("shape parent")?;
            let figure = r.i32("shape figure offset")?;
            let kind = r.u8("shape type")?;
            raw_shapes.push((parent, figure, kind));
        }
        // The first figure of the next shape that has figures, for each shape (one pass back).
        let mut next_first = vec![n_figures as i64; n_shapes];
        for i in (0..n_shapes.saturating_sub(1)).rev() {
            let next = raw_shapes[i + 1].1;
            next_first[i] = if next == -1 { next_first[i + 1] } else { i64::from(next) };
        }
        let mut shapes = Vec::with_capacity(n_shapes);
        for (i, &(parent, figure, kind)) in raw_shapes.iter().enumerate() {
            let kind = ShapeType::from_u8(kind, version)
                .ok_or_else(|| r.bad(&format!("shape {i} has type {kind} (version {version})")))?;
            let parent_ok = if i == 0 { parent == -1 } else { parent >= 0 && (parent as usize) < i };
            if !parent_ok {
                return Err(r.bad(&format!("shape {i} has parent {parent}")));
            }
            let figures = if figure == -1 {
                0..0
            } else {
                let end = next_first[i];
                let first = i64::from(figure);
                if first < 0 || first > end || end > n_figures as i64 {
                    return Err(r.bad(&format!("shape {i} figures {first}..{end} of {n_figures}")));
                }
                first as usize..end as usize
            };
            shapes.push(Shape { parent, figures, kind, children: Vec::new() });
        }
        if shapes.is_empty() {
            return Err(r.bad("no shapes"));
        }
        let segments = if version >= 2 && r.pos < bytes.len() {
            let n = r.count(1, "number of segments")?;
            r.take(n, "segments")?.to_vec()
        } else {
            Vec::new()
        };
        (figures, shapes, segments)
    };
    if r.pos != bytes.len() {
        return Err(r.bad(&format!("{} bytes after the value", bytes.len() - r.pos)));
    }
    for i in 1..shapes.len() {
        let parent = shapes[i].parent as usize;
        shapes[parent].children.push(i);
    }
    let compounds = compound_parts(&figures, &segments, version)?;
    let root = build(&shapes, &figures, &compounds, 0, 0)?;
    Ok(Spatial { srid, xy, z, m, root })
}

/// The parts of every figure of attribute 3 (version 2), taking segments in figure order.
fn compound_parts(figures: &[Figure], segments: &[u8], version: u8) -> Result<Vec<Option<Vec<Part>>>> {
    let bad = |what: String| Error::corrupt(format!("spatial value: {what}"));
    let mut next = 0usize;
    let mut out = Vec::with_capacity(figures.len());
    for (i, f) in figures.iter().enumerate() {
        if version < 2 || f.attribute != 3 {
            out.push(None);
            continue;
        }
        let Range { start, end } = f.points.clone();
        if end - start < 2 {
            return Err(bad(format!("composite curve figure {i} has {} points", end - start)));
        }
        let mut parts: Vec<Part> = Vec::new();
        let mut at = start;
        // Each segment takes at least one point, so this ends within end - start rounds.
        while at + 1 < end {
            let seg = *segments.get(next).ok_or_else(|| bad(format!("figure {i} runs out of segments")))?;
            next += 1;
            let arc = match seg {
                0 | 2 => false,
                1 | 3 => true,
                other => return Err(bad(format!("segment type {other}"))),
            };
            let step = if arc { 2 } else { 1 };
            if at + step >= end {
                return Err(bad(format!("segment {} of figure {i} goes past its points", next - 1)));
            }
            let continues = match parts.last_mut() {
                Some(Part::Line(r)) if !arc && seg == 0 => Some(r),
                Some(Part::Arc(r)) if arc && seg == 1 => Some(r),
                _ => None,
            };
            match continues {
                Some(r) => r.end = at + step + 1,
                None if arc => parts.push(Part::Arc(at..at + step + 1)),
                None => parts.push(Part::Line(at..at + step + 1)),
            }
            at += step;
        }
        out.push(Some(parts));
    }
    if next != segments.len() {
        return Err(bad(format!("{} segments, {next} used", segments.len())));
    }
    Ok(out)
}

fn build(
    shapes: &[Shape],
    figures: &[Figure],
    compounds: &[Option<Vec<Part>>],
    index: usize,
    depth: usize,
) -> Result<Geom> {
    let bad = |what: String| Error::corrupt(format!("spatial value: shape {index}: {what}"));
    if depth > MAX_DEPTH {
        return Err(Error::unsupported(format!("spatial values nested deeper than {MAX_DEPTH}")));
    }
    let shape = &shapes[index];
    let figs = &figures[shape.figures.clone()];
    let one_figure = || -> Result<Option<&Figure>> {
        match figs.len() {
            0 => Ok(None),
            1 => Ok(Some(&figs[0])),
            n => Err(bad(format!("{} with {n} figures", shape.kind.wkt_name()))),
        }
    };
    let leaf = !matches!(
        shape.kind,
        ShapeType::MultiPoint | ShapeType::MultiLineString | ShapeType::MultiPolygon | ShapeType::GeometryCollection
    );
    if leaf && !shape.children.is_empty() {
        return Err(bad(format!("{} with child shapes", shape.kind.wkt_name())));
    }
    Ok(match shape.kind {
        ShapeType::Point => match one_figure()? {
            None => Geom::Point(None),
            Some(f) if f.points.is_empty() => Geom::Point(None),
            Some(f) if f.points.len() == 1 => Geom::Point(Some(f.points.start)),
            Some(f) => return Err(bad(format!("point with {} points", f.points.len()))),
        },
        ShapeType::LineString => Geom::LineString(one_figure()?.map_or(0..0, |f| f.points.clone())),
        ShapeType::CircularString => Geom::CircularString(one_figure()?.map_or(0..0, |f| f.points.clone())),
        ShapeType::Polygon => Geom::Polygon(figs.iter().map(|f| f.points.clone()).collect()),
        ShapeType::CompoundCurve => match one_figure()? {
            None => Geom::CompoundCurve(Vec::new()),
            Some(f) => match ring(f, shape.figures.start, compounds) {
                Ring::Compound(parts) => Geom::CompoundCurve(parts),
                Ring::Part(p) => Geom::CompoundCurve(vec![p]),
            },
        },
        ShapeType::CurvePolygon => {
            Geom::CurvePolygon(shape.figures.clone().map(|i| ring(&figures[i], i, compounds)).collect())
        }
        ShapeType::FullGlobe => Geom::FullGlobe,
        kind => {
            let want = match kind {
                ShapeType::MultiPoint => Some(ShapeType::Point),
                ShapeType::MultiLineString => Some(ShapeType::LineString),
                ShapeType::MultiPolygon => Some(ShapeType::Polygon),
                _ => None,
            };
            let mut members = Vec::with_capacity(shape.children.len());
            for &c in &shape.children {
                if want.is_some_and(|w| shapes[c].kind != w) {
                    return Err(bad(format!("{} holds a {}", kind.wkt_name(), shapes[c].kind.wkt_name())));
                }
                members.push(build(shapes, figures, compounds, c, depth + 1)?);
            }
            Geom::Collection(kind, members)
        }
    })
}

/// A figure as a ring or curve by its (version 2) attribute: 2 arc, 3 composite, else line.
fn ring(f: &Figure, index: usize, compounds: &[Option<Vec<Part>>]) -> Ring {
    match (f.attribute, compounds.get(index).and_then(|c| c.as_ref())) {
        (3, Some(parts)) => Ring::Compound(parts.clone()),
        (2, _) => Ring::Part(Part::Arc(f.points.clone())),
        _ => Ring::Part(Part::Line(f.points.clone())),
    }
}

impl Spatial {
    fn dims(&self) -> u32 {
        match (self.z.is_some(), self.m.is_some()) {
            (false, false) => 0,
            (true, false) => 1000,
            (false, true) => 2000,
            (true, true) => 3000,
        }
    }

    /// The value as ISO Well-Known Binary (little endian).
    pub fn wkb(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.wkb_geom(&self.root, &mut out)?;
        Ok(out)
    }

    fn wkb_header(&self, code: u32, out: &mut Vec<u8>) {
        out.push(1);
        out.extend_from_slice(&(code + self.dims()).to_le_bytes());
    }

    fn wkb_point(&self, i: Option<usize>, out: &mut Vec<u8>) {
        let [x, y] = i.map_or([f64::NAN; 2], |i| self.xy[i]);
        out.extend_from_slice(&x.to_le_bytes());
        out.extend_from_slice(&y.to_le_bytes());
        if let Some(z) = &self.z {
            out.extend_from_slice(&i.map_or(f64::NAN, |i| z[i]).to_le_bytes());
        }
        if let Some(m) = &self.m {
            out.extend_from_slice(&i.map_or(f64::NAN, |i| m[i]).to_le_bytes());
        }
    }

    fn wkb_points(&self, r: &Range<usize>, out: &mut Vec<u8>) {
        out.extend_from_slice(&(r.len() as u32).to_le_bytes());
        for i in r.clone() {
            self.wkb_point(Some(i), out);
        }
    }

    fn wkb_part(&self, p: &Part, out: &mut Vec<u8>) {
        let (code, r) = match p {
            Part::Line(r) => (2, r),
            Part::Arc(r) => (8, r),
        };
        self.wkb_header(code, out);
        self.wkb_points(r, out);
    }

    fn wkb_geom(&self, g: &Geom, out: &mut Vec<u8>) -> Result<()> {
        match g {
            Geom::Point(i) => {
                self.wkb_header(1, out);
                self.wkb_point(*i, out);
            }
            Geom::LineString(r) => {
                self.wkb_header(2, out);
                self.wkb_points(r, out);
            }
            Geom::CircularString(r) => {
                self.wkb_header(8, out);
                self.wkb_points(r, out);
            }
            Geom::Polygon(rings) => {
                self.wkb_header(3, out);
                out.extend_from_slice(&(rings.len() as u32).to_le_bytes());
                for r in rings {
                    self.wkb_points(r, out);
                }
            }
            Geom::CompoundCurve(parts) => {
                self.wkb_header(9, out);
                out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
                for p in parts {
                    self.wkb_part(p, out);
                }
            }
            Geom::CurvePolygon(rings) => {
                self.wkb_header(10, out);
                out.extend_from_slice(&(rings.len() as u32).to_le_bytes());
                for r in rings {
                    match r {
                        Ring::Part(p) => self.wkb_part(p, out),
                        Ring::Compound(parts) => {
                            self.wkb_header(9, out);
                            out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
                            for p in parts {
                                self.wkb_part(p, out);
                            }
                        }
                    }
                }
            }
            Geom::Collection(kind, members) => {
                self.wkb_header(*kind as u32, out);
                out.extend_from_slice(&(members.len() as u32).to_le_bytes());
                for m in members {
                    self.wkb_geom(m, out)?;
                }
            }
            Geom::FullGlobe => return Err(Error::unsupported("FULLGLOBE has no Well-Known Binary form")),
        }
        Ok(())
    }

    /// The value as the Well-Known Text SQL Server's `ToString()` prints.
    pub fn wkt(&self) -> String {
        let mut out = String::new();
        self.wkt_geom(&self.root, true, &mut out);
        out
    }

    fn wkt_coords(&self, i: usize, out: &mut String) {
        let [x, y] = self.xy[i];
        out.push_str(&number(x));
        out.push(' ');
        out.push_str(&number(y));
        let z = self.z.as_ref().map(|z| z[i]);
        let m = self.m.as_ref().map(|m| m[i]);
        if z.is_some() || m.is_some() {
            out.push(' ');
            out.push_str(&z.filter(|v| !v.is_nan()).map_or("NULL".to_string(), number));
        }
        if let Some(m) = m {
            out.push(' ');
            out.push_str(&if m.is_nan() { "NULL".to_string() } else { number(m) });
        }
    }

    /// `(x y, x y, ...)`, or `EMPTY` for no points.
    fn wkt_list(&self, r: &Range<usize>, out: &mut String) {
        if r.is_empty() {
            out.push_str("EMPTY");
            return;
        }
        out.push('(');
        for (n, i) in r.clone().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            self.wkt_coords(i, out);
        }
        out.push(')');
    }

    /// A compound curve part: lines bare, arcs tagged.
    fn wkt_part(&self, p: &Part, out: &mut String) {
        match p {
            Part::Line(r) => self.wkt_list(r, out),
            Part::Arc(r) => {
                out.push_str("CIRCULARSTRING ");
                self.wkt_list(r, out);
            }
        }
    }

    fn wkt_parts(&self, parts: &[Part], out: &mut String) {
        if parts.is_empty() {
            out.push_str("EMPTY");
            return;
        }
        out.push('(');
        for (n, p) in parts.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            self.wkt_part(p, out);
        }
        out.push(')');
    }

    /// `tagged`: with the type name (false inside MULTIPOINT / MULTILINESTRING / MULTIPOLYGON).
    fn wkt_geom(&self, g: &Geom, tagged: bool, out: &mut String) {
        let tag = |out: &mut String, name: &str| {
            if tagged {
                out.push_str(name);
                out.push(' ');
            }
        };
        match g {
            Geom::Point(i) => {
                tag(out, "POINT");
                match i {
                    Some(i) => self.wkt_list(&(*i..*i + 1), out),
                    None => out.push_str("EMPTY"),
                }
            }
            Geom::LineString(r) => {
                tag(out, "LINESTRING");
                self.wkt_list(r, out);
            }
            Geom::CircularString(r) => {
                tag(out, "CIRCULARSTRING");
                self.wkt_list(r, out);
            }
            Geom::Polygon(rings) => {
                tag(out, "POLYGON");
                self.wkt_seq(rings, out, |s, r, out| s.wkt_list(r, out));
            }
            Geom::CompoundCurve(parts) => {
                tag(out, "COMPOUNDCURVE");
                self.wkt_parts(parts, out);
            }
            Geom::CurvePolygon(rings) => {
                tag(out, "CURVEPOLYGON");
                self.wkt_seq(rings, out, |s, r, out| match r {
                    Ring::Part(p) => s.wkt_part(p, out),
                    Ring::Compound(parts) => {
                        out.push_str("COMPOUNDCURVE ");
                        s.wkt_parts(parts, out);
                    }
                });
            }
            Geom::Collection(kind, members) => {
                tag(out, kind.wkt_name());
                let inner_tagged = *kind == ShapeType::GeometryCollection;
                self.wkt_seq(members, out, |s, m, out| s.wkt_geom(m, inner_tagged, out));
            }
            Geom::FullGlobe => out.push_str("FULLGLOBE"),
        }
    }

    fn wkt_seq<T>(&self, items: &[T], out: &mut String, each: impl Fn(&Self, &T, &mut String)) {
        if items.is_empty() {
            out.push_str("EMPTY");
            return;
        }
        out.push('(');
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            each(self, item, out);
        }
        out.push(')');
    }
}

/// A coordinate as text: the shortest spelling that reads back to the same double, in .NET's
/// round-trip style (exponent form `1.5E+15`, `1E-07` outside 1e-5 ≤ |v| < 1e15).
fn number(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let abs = v.abs();
    if (1e-5..1e15).contains(&abs) {
        return v.to_string();
    }
    // Rust's `{:e}` gives the shortest digits too: `1.5e15`, `1e-7`.
    let e = format!("{v:e}");
    match e.split_once('e') {
        Some((mantissa, exp)) => {
            let exp: i32 = exp.parse().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{mantissa}E{sign}{:02}", exp.unsigned_abs())
        }
        None => e,
    }
}

/// A stored value as (SRID, ISO WKB).
pub fn to_wkb(bytes: &[u8], geography: bool) -> Result<(i32, Vec<u8>)> {
    let s = parse(bytes, geography)?;
    Ok((s.srid, s.wkb()?))
}

/// A stored value as the WKT SQL Server's `ToString()` prints (the SRID is not part of it).
pub fn to_wkt(bytes: &[u8], geography: bool) -> Result<String> {
    Ok(parse(bytes, geography)?.wkt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s = s.trim_start_matches("0x");
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Test-only encoder of the stored form (always the full form, never P / L).
    struct Enc {
        version: u8,
        props: u8,
        points: Vec<[f64; 2]>,
        z: Vec<f64>,
        m: Vec<f64>,
        figures: Vec<(u8, i32)>,
        shapes: Vec<(i32, i32, u8)>,
        segments: Option<Vec<u8>>,
    }

    impl Enc {
        fn new(version: u8) -> Self {
            Enc {
                version,
                props: 0x04,
                points: vec![],
                z: vec![],
                m: vec![],
                figures: vec![],
                shapes: vec![],
                segments: None,
            }
        }

        fn bytes(&self) -> Vec<u8> {
            let mut b = 0i32.to_le_bytes().to_vec();
            b.push(self.version);
            b.push(self.props);
            b.extend((self.points.len() as u32).to_le_bytes());
            for p in &self.points {
                b.extend(p[0].to_le_bytes());
                b.extend(p[1].to_le_bytes());
            }
            for v in self.z.iter().chain(&self.m) {
                b.extend(v.to_le_bytes());
            }
            b.extend((self.figures.len() as u32).to_le_bytes());
            for (a, o) in &self.figures {
                b.push(*a);
                b.extend(o.to_le_bytes());
            }
            b.extend((self.shapes.len() as u32).to_le_bytes());
            for (p, f, t) in &self.shapes {
                b.extend(p.to_le_bytes());
                b.extend(f.to_le_bytes());
                b.push(*t);
            }
            if let Some(s) = &self.segments {
                b.extend((s.len() as u32).to_le_bytes());
                b.extend(s);
            }
            b
        }
    }

    fn pts(v: &[(f64, f64)]) -> Vec<[f64; 2]> {
        v.iter().map(|&(x, y)| [x, y]).collect()
    }

    #[test]
    fn geography_points_store_latitude_first() {
        // STGeomFromText('POINT(-73.99 40.75)', 4326), as published with its bytes.
        let b = unhex("0xE6100000010C00000000006044408FC2F5285C7F52C0");
        let s = parse(&b, true).unwrap();
        assert_eq!(s.srid, 4326);
        assert_eq!(s.wkt(), "POINT (-73.99 40.75)");
        let wkb = s.wkb().unwrap();
        let mut expected = vec![1, 1, 0, 0, 0];
        expected.extend((-73.99f64).to_le_bytes());
        expected.extend(40.75f64.to_le_bytes());
        assert_eq!(wkb, expected);
        // The same bytes as geometry are x = 40.75, y = -73.99.
        assert_eq!(to_wkt(&b, false).unwrap(), "POINT (40.75 -73.99)");
        let b = unhex("0xE6100000010CFCC6D79E59721AC05BED612F14CA4A40");
        assert_eq!(to_wkt(&b, true).unwrap(), "POINT (53.578741 -6.61167)");
    }

    #[test]
    fn single_line_segment() {
        // Bytes from a public script; the coordinates are those of the STLineFromText documentation
        // example, LINESTRING(-122.360 47.656, -122.343 47.656), SRID 4326.
        let b = unhex("E610000001148716D9CEF7D34740D7A3703D0A975EC08716D9CEF7D34740CBA145B6F3955EC0");
        assert_eq!(to_wkt(&b, true).unwrap(), "LINESTRING (-122.36 47.656, -122.343 47.656)");
        let (srid, wkb) = to_wkb(&b, true).unwrap();
        assert_eq!(srid, 4326);
        assert_eq!(&wkb[..9], &[1, 2, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(wkb.len(), 9 + 32);
    }

    #[test]
    fn polygon_and_empty_point_from_public_scripts() {
        // Published bytes; the expected text is derived here from the format.
        let b = unhex(concat!(
            "E610000001040500000000000000000024400000000000003E4000000000000044400000000000004440",
            "000000000000444000000000000034400000000000003440000000000000244000000000000024400000",
            "000000003E4001000000020000000001000000FFFFFFFF0000000003"
        ));
        assert_eq!(to_wkt(&b, true).unwrap(), "POLYGON ((30 10, 40 40, 20 40, 10 20, 30 10))");
        let (_, wkb) = to_wkb(&b, true).unwrap();
        assert_eq!(&wkb[..13], &[1, 3, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(wkb.len(), 13 + 5 * 16);
        let empty = unhex("0xE61000000104000000000000000001000000FFFFFFFFFFFFFFFF01");
        assert_eq!(to_wkt(&empty, true).unwrap(), "POINT EMPTY");
        let (_, wkb) = to_wkb(&empty, true).unwrap();
        assert_eq!(&wkb[..5], &[1, 1, 0, 0, 0]);
        assert!(f64::from_le_bytes(wkb[5..13].try_into().unwrap()).is_nan());
    }

    #[test]
    fn multi_shapes_and_collections() {
        // GEOMETRYCOLLECTION (POINT (1 2), MULTILINESTRING ((0 0, 1 1), (2 2, 3 3)), POLYGON EMPTY)
        let mut e = Enc::new(1);
        e.points = pts(&[(1.0, 2.0), (0.0, 0.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]);
        e.figures = vec![(1, 0), (1, 1), (1, 3)];
        e.shapes = vec![(-1, 0, 7), (0, 0, 1), (0, 1, 5), (2, 1, 2), (2, 2, 2), (0, -1, 3)];
        let b = e.bytes();
        assert_eq!(
            to_wkt(&b, false).unwrap(),
            "GEOMETRYCOLLECTION (POINT (1 2), MULTILINESTRING ((0 0, 1 1), (2 2, 3 3)), POLYGON EMPTY)"
        );
        let (_, wkb) = to_wkb(&b, false).unwrap();
        assert_eq!(&wkb[..9], &[1, 7, 0, 0, 0, 3, 0, 0, 0]);
        // point 21, multilinestring 9 + 2 × (9 + 32), polygon 9.
        assert_eq!(wkb.len(), 9 + 21 + 9 + 2 * 41 + 9);

        // MULTIPOINT ((1 2), (3 4)) and MULTIPOLYGON with a hole.
        let mut e = Enc::new(1);
        e.points = pts(&[(1.0, 2.0), (3.0, 4.0)]);
        e.figures = vec![(1, 0), (1, 1)];
        e.shapes = vec![(-1, 0, 4), (0, 0, 1), (0, 1, 1)];
        assert_eq!(to_wkt(&e.bytes(), false).unwrap(), "MULTIPOINT ((1 2), (3 4))");
        let mut e = Enc::new(1);
        e.points = pts(&[(0., 0.), (9., 0.), (9., 9.), (0., 0.), (1., 1.), (2., 1.), (2., 2.), (1., 1.)]);
        e.figures = vec![(2, 0), (0, 4)];
        e.shapes = vec![(-1, 0, 6), (0, 0, 3)];
        assert_eq!(to_wkt(&e.bytes(), false).unwrap(), "MULTIPOLYGON (((0 0, 9 0, 9 9, 0 0), (1 1, 2 1, 2 2, 1 1)))");
        let mut e = Enc::new(1);
        e.shapes = vec![(-1, -1, 7)];
        assert_eq!(to_wkt(&e.bytes(), false).unwrap(), "GEOMETRYCOLLECTION EMPTY");
    }

    #[test]
    fn z_and_m_values() {
        let mut e = Enc::new(1);
        e.props = 0x04 | PROP_Z | PROP_M;
        e.points = pts(&[(1.0, 2.0), (3.0, 4.0)]);
        e.z = vec![5.0, f64::NAN];
        e.m = vec![7.5, 8.0];
        e.figures = vec![(1, 0)];
        e.shapes = vec![(-1, 0, 2)];
        let b = e.bytes();
        assert_eq!(to_wkt(&b, false).unwrap(), "LINESTRING (1 2 5 7.5, 3 4 NULL 8)");
        let (_, wkb) = to_wkb(&b, false).unwrap();
        assert_eq!(&wkb[..9], &[1, 0xBA, 0x0B, 0, 0, 2, 0, 0, 0]); // 3002
        assert_eq!(wkb.len(), 9 + 2 * 32);
        // M only: SQL Server writes NULL for the missing Z.
        let mut p = 0i32.to_le_bytes().to_vec();
        p.extend([1, 0x04 | PROP_SINGLE_POINT | PROP_M]);
        for v in [1.0f64, 2.0, 9.0] {
            p.extend(v.to_le_bytes());
        }
        assert_eq!(to_wkt(&p, false).unwrap(), "POINT (1 2 NULL 9)");
        assert_eq!(&to_wkb(&p, false).unwrap().1[..5], &[1, 0xD1, 0x07, 0, 0]); // 2001
    }

    #[test]
    fn version_2_curves() {
        // CIRCULARSTRING (0 0, 1 1, 2 0)
        let mut e = Enc::new(2);
        e.points = pts(&[(0., 0.), (1., 1.), (2., 0.)]);
        e.figures = vec![(2, 0)];
        e.shapes = vec![(-1, 0, 8)];
        let b = e.bytes();
        assert_eq!(to_wkt(&b, false).unwrap(), "CIRCULARSTRING (0 0, 1 1, 2 0)");
        assert_eq!(&to_wkb(&b, false).unwrap().1[..9], &[1, 8, 0, 0, 0, 3, 0, 0, 0]);

        // COMPOUNDCURVE ((0 0, 1 0, 2 0), CIRCULARSTRING (2 0, 3 1, 4 0))
        let mut e = Enc::new(2);
        e.points = pts(&[(0., 0.), (1., 0.), (2., 0.), (3., 1.), (4., 0.)]);
        e.figures = vec![(3, 0)];
        e.shapes = vec![(-1, 0, 9)];
        e.segments = Some(vec![2, 0, 3]);
        let b = e.bytes();
        assert_eq!(to_wkt(&b, false).unwrap(), "COMPOUNDCURVE ((0 0, 1 0, 2 0), CIRCULARSTRING (2 0, 3 1, 4 0))");
        let (_, wkb) = to_wkb(&b, false).unwrap();
        assert_eq!(&wkb[..9], &[1, 9, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(&wkb[9..18], &[1, 2, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(wkb.len(), 9 + (9 + 48) * 2);

        // CURVEPOLYGON (CIRCULARSTRING (0 0, 2 2, 0 0), (0 0, 1 0, 0 0)) and a compound ring.
        let mut e = Enc::new(2);
        e.points =
            pts(&[(0., 0.), (2., 2.), (0., 0.), (0., 0.), (1., 0.), (0., 0.), (5., 5.), (6., 5.), (5., 6.), (5., 5.)]);
        e.figures = vec![(2, 0), (1, 3), (3, 6)];
        e.shapes = vec![(-1, 0, 10)];
        e.segments = Some(vec![2, 3]);
        assert_eq!(
            to_wkt(&e.bytes(), false).unwrap(),
            "CURVEPOLYGON (CIRCULARSTRING (0 0, 2 2, 0 0), (0 0, 1 0, 0 0), \
             COMPOUNDCURVE ((5 5, 6 5), CIRCULARSTRING (6 5, 5 6, 5 5)))"
        );
        assert!(to_wkb(&e.bytes(), false).is_ok());

        // FULLGLOBE has text but no WKB.
        let mut e = Enc::new(2);
        e.shapes = vec![(-1, -1, 11)];
        assert_eq!(to_wkt(&e.bytes(), true).unwrap(), "FULLGLOBE");
        assert_eq!(to_wkb(&e.bytes(), true).unwrap_err().kind(), crate::ErrorKind::Unsupported);
        // Curve types are version 2 only.
        let mut e = Enc::new(1);
        e.points = pts(&[(0., 0.), (1., 1.), (2., 0.)]);
        e.figures = vec![(2, 0)];
        e.shapes = vec![(-1, 0, 8)];
        assert!(parse(&e.bytes(), false).is_err());
    }

    #[test]
    fn numbers_as_dotnet_round_trip() {
        assert_eq!(number(-122.349), "-122.349");
        assert_eq!(number(1.0), "1");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(1e15), "1E+15");
        assert_eq!(number(1.5e-7), "1.5E-07");
        assert_eq!(number(123456789012345.6), "123456789012345.6");
        assert_eq!(number(0.00001), "0.00001");
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        // Counts larger than the value, bad offsets, parents after children, trailing bytes.
        let mut e = Enc::new(1);
        e.points = pts(&[(0., 0.), (1., 1.)]);
        e.figures = vec![(1, 0)];
        e.shapes = vec![(-1, 0, 2)];
        let good = e.bytes();
        assert!(parse(&good, false).is_ok());
        let mut huge = good.clone();
        huge[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&huge, false).is_err());
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(parse(&trailing, false).is_err());
        e.figures = vec![(1, 3)];
        assert!(parse(&e.bytes(), false).is_err());
        e.figures = vec![(1, 0)];
        e.shapes = vec![(-1, 0, 4), (1, 0, 1)];
        assert!(parse(&e.bytes(), false).is_err());
        e.shapes = vec![(-1, 0, 0)];
        assert!(parse(&e.bytes(), false).is_err());
        // A compound curve whose segments overrun its points.
        let mut c = Enc::new(2);
        c.points = pts(&[(0., 0.), (1., 0.)]);
        c.figures = vec![(3, 0)];
        c.shapes = vec![(-1, 0, 9)];
        c.segments = Some(vec![3]);
        assert!(parse(&c.bytes(), false).is_err());
        c.segments = Some(vec![]);
        assert!(parse(&c.bytes(), false).is_err());

        // Random bytes and random damage to valid values.
        let mut rng = crate::clrtypes::tests::Rng(7);
        let samples = [good, unhex("E610000001148716D9CEF7D34740D7A3703D0A975EC08716D9CEF7D34740CBA145B6F3955EC0")];
        for round in 0..40_000 {
            let mut b = if round % 2 == 0 {
                samples[round / 2 % 2].clone()
            } else {
                (0..rng.below(80) as usize).map(|_| rng.next() as u8).collect()
            };
            if !b.is_empty() {
                for _ in 0..1 + rng.below(3) {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] = rng.next() as u8;
                }
                if rng.below(4) == 0 {
                    b.truncate(rng.below(b.len() as u64) as usize);
                }
            }
            for geography in [false, true] {
                if let Ok(s) = parse(&b, geography) {
                    let _ = s.wkb();
                    let _ = s.wkt();
                }
            }
        }
    }
}
