//! A line chart as a PNG: throughput against requests in flight (log-2 x axis), one line per
//! object size, with axis labels and a legend.
//!
//! Drawn on an RGB canvas by a small rasterizer (lines as runs of discs, filled squares) and
//! labelled with the public-domain 8×8 bitmap font of the `font8x8` crate (glyph rows are bytes,
//! bit 0 the leftmost pixel); the `png` crate encodes it. A plotting stack would bring fonts,
//! shaping and a renderer for a picture this plain.

type Rgb = [u8; 3];

const WIDTH: usize = 900;
const HEIGHT: usize = 560;
const LEFT: usize = 90;
const RIGHT: usize = WIDTH - 190;
const TOP: usize = 50;
const BOTTOM: usize = HEIGHT - 70;
const BLACK: Rgb = [0, 0, 0];
const GRID: Rgb = [225, 225, 225];
const PALETTE: [Rgb; 8] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [127, 127, 127],
];

/// One line: its legend label and its `(x, y)` points (x > 0).
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// The chart encoded as PNG.
pub fn line_chart_png(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> Result<Vec<u8>, String> {
    let mut canvas = Canvas { pixels: vec![255; WIDTH * HEIGHT * 3] };
    let points = || series.iter().flat_map(|s| s.points.iter()).filter(|(x, _)| *x > 0.0);
    let (x_min, x_max) = points().fold((f64::MAX, f64::MIN), |(lo, hi), (x, _)| (lo.min(x.log2()), hi.max(x.log2())));
    let (x_min, x_max) = if x_min > x_max {
        (0.0, 1.0)
    } else if x_min == x_max {
        (x_min - 1.0, x_max + 1.0)
    } else {
        (x_min, x_max)
    };
    let y_top = points().map(|(_, y)| *y).fold(0.0, f64::max);
    let step = nice_step(y_top / 5.0);
    let y_max = (y_top / step).ceil().max(1.0) * step;
    let to_px = |x: f64, y: f64| -> (f64, f64) {
        let px = LEFT as f64 + (x.log2() - x_min) / (x_max - x_min) * (RIGHT - LEFT) as f64;
        let py = BOTTOM as f64 - y / y_max * (BOTTOM - TOP) as f64;
        (px, py)
    };
    // Grid, ticks and tick labels.
    let mut y = 0.0;
    while y <= y_max + step / 2.0 {
        let (_, py) = to_px(1.0, y);
        let py = py.round() as usize;
        canvas.hline(LEFT, RIGHT, py, GRID);
        let label = format_number(y, step);
        canvas.text(LEFT - 8 - label.len() * 8, py.saturating_sub(4), &label, BLACK);
        y += step;
    }
    let mut xs: Vec<f64> = points().map(|(x, _)| *x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let (px, _) = to_px(x, 0.0);
        let px = px.round() as usize;
        canvas.vline(px, TOP, BOTTOM, GRID);
        let label = format_number(x, 1.0);
        canvas.text(px.saturating_sub(label.len() * 4), BOTTOM + 8, &label, BLACK);
    }
    canvas.hline(LEFT, RIGHT, BOTTOM, BLACK);
    canvas.vline(LEFT, TOP, BOTTOM, BLACK);
    // Titles.
    canvas.text_scaled((WIDTH - title.len() * 16) / 2, 14, title, BLACK, 2);
    canvas.text((LEFT + RIGHT - x_label.len() * 8) / 2, BOTTOM + 36, x_label, BLACK);
    canvas.text_vertical(18, (TOP + BOTTOM + y_label.len() * 8) / 2, y_label, BLACK);
    // Lines, markers and the legend.
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut pts: Vec<(f64, f64)> = s.points.iter().filter(|(x, _)| *x > 0.0).map(|&(x, y)| to_px(x, y)).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in pts.windows(2) {
            canvas.line(pair[0], pair[1], color);
        }
        for &(px, py) in &pts {
            canvas.square(px.round() as usize, py.round() as usize, 3, color);
        }
        let ly = TOP + 10 + i * 20;
        canvas.line(((RIGHT + 20) as f64, ly as f64), ((RIGHT + 50) as f64, ly as f64), color);
        canvas.text(RIGHT + 58, ly.saturating_sub(4), &s.label, BLACK);
    }
    canvas.encode()
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * power).find(|s| *s >= raw).unwrap_or(10.0 * power)
}

/// A tick label with as many decimals as the step needs.
fn format_number(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    format!("{value:.decimals$}")
}

struct Canvas {
    pixels: Vec<u8>,
}

impl Canvas {
    fn set(&mut self, x: usize, y: usize, color: Rgb) {
        if x < WIDTH && y < HEIGHT {
            let at = (y * WIDTH + x) * 3;
            self.pixels[at..at + 3].copy_from_slice(&color);
        }
    }

    fn hline(&mut self, x0: usize, x1: usize, y: usize, color: Rgb) {
        (x0..=x1).for_each(|x| self.set(x, y, color));
    }

    fn vline(&mut self, x: usize, y0: usize, y1: usize, color: Rgb) {
        (y0..=y1).for_each(|y| self.set(x, y, color));
    }

    fn square(&mut self, cx: usize, cy: usize, half: usize, color: Rgb) {
        for y in cy.saturating_sub(half)..=cy + half {
            for x in cx.saturating_sub(half)..=cx + half {
                self.set(x, y, color);
            }
        }
    }

    /// A line two pixels thick: a small square at every step along it.
    fn line(&mut self, from: (f64, f64), to: (f64, f64), color: Rgb) {
        let steps = (to.0 - from.0).abs().max((to.1 - from.1).abs()).ceil().max(1.0) as usize;
        for i in 0..=steps {
            let t = i as f64 / steps as f64;
            let x = from.0 + (to.0 - from.0) * t;
            let y = from.1 + (to.1 - from.1) * t;
            if x >= 0.0 && y >= 0.0 {
                self.square(x.round() as usize, y.round() as usize, 1, color);
            }
        }
    }

    fn glyph(c: char) -> [u8; 8] {
        font8x8::legacy::BASIC_LEGACY.get(c as usize).copied().unwrap_or(font8x8::legacy::BASIC_LEGACY[b'?' as usize])
    }

    fn text(&mut self, x: usize, y: usize, text: &str, color: Rgb) {
        self.text_scaled(x, y, text, color, 1);
    }

    fn text_scaled(&mut self, x: usize, y: usize, text: &str, color: Rgb, scale: usize) {
        for (i, c) in text.chars().enumerate() {
            for (row, bits) in Self::glyph(c).into_iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        let (px, py) = (x + (i * 8 + col) * scale, y + row * scale);
                        self.square(px, py, scale / 2, color);
                    }
                }
            }
        }
    }

    /// Text read from bottom to top, its baseline on the right; `y` is where it starts (bottom).
    fn text_vertical(&mut self, x: usize, y: usize, text: &str, color: Rgb) {
        for (i, c) in text.chars().enumerate() {
            for (row, bits) in Self::glyph(c).into_iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        self.set(x + row, y.saturating_sub(i * 8 + col), color);
                    }
                }
            }
        }
    }

    fn encode(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, WIDTH as u32, HEIGHT as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
        writer.write_image_data(&self.pixels).map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(13.0), 20.0);
        assert_eq!(nice_step(240.0), 500.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(format_number(2.5, 0.5), "2.5");
    }

    #[test]
    fn charts_decode_back_to_an_image_of_their_size_with_the_lines_drawn() {
        let series = vec![
            Series { label: "1K".into(), points: vec![(1.0, 1.0), (4.0, 3.0), (16.0, 5.0)] },
            Series { label: "16M".into(), points: vec![(1.0, 10.0), (4.0, 40.0), (16.0, 90.0)] },
        ];
        let bytes = line_chart_png("GET throughput", "requests in flight", "MB/s", &series).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((info.width, info.height), (WIDTH as u32, HEIGHT as u32));
        // The second series' last point: x = 16 is the right edge, y = 90 of a 100 axis.
        let (x, y) = (RIGHT, BOTTOM - (BOTTOM - TOP) * 90 / 100);
        let at = (y * WIDTH + x) * 3;
        assert_eq!(&pixels[at..at + 3], &PALETTE[1]);
    }
}
