//! Quickstart: a small multi-threaded ray tracer profiled with Metron.
//!
//! Four worker threads render tiles of a scene of spheres (with shadows and reflections)
//! for a few frames. `#[metron::profile]` marks the frame and tile functions, `scope!` the
//! shading of each pixel, a bundle measures each tile's CPU time and page faults, and a
//! counter tracks the tiles left. At exit Metron writes the run folder and says where.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```

use metron::components::{PageFaults, ThreadCpuClock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const WIDTH: usize = 320;
const HEIGHT: usize = 240;
const TILE: usize = 32;
const FRAMES: usize = 4;
const THREADS: usize = 4;
const MAX_DEPTH: u32 = 3;

/// CPU time and page faults of each tile, on top of its wall clock.
#[derive(Default, metron::Bundle)]
struct TileCost {
    cpu: ThreadCpuClock,
    faults: PageFaults,
}

#[derive(Clone, Copy)]
struct V(f64, f64, f64);

impl V {
    fn add(self, o: V) -> V {
        V(self.0 + o.0, self.1 + o.1, self.2 + o.2)
    }
    fn sub(self, o: V) -> V {
        V(self.0 - o.0, self.1 - o.1, self.2 - o.2)
    }
    fn mul(self, k: f64) -> V {
        V(self.0 * k, self.1 * k, self.2 * k)
    }
    fn dot(self, o: V) -> f64 {
        self.0 * o.0 + self.1 * o.1 + self.2 * o.2
    }
    fn norm(self) -> V {
        self.mul(1.0 / self.dot(self).sqrt())
    }
}

struct Sphere {
    center: V,
    radius: f64,
    color: V,
    mirror: f64,
}

fn scene(frame: usize) -> Vec<Sphere> {
    let t = frame as f64 * 0.3;
    let mut spheres = vec![Sphere {
        center: V(0.0, -1000.0, 0.0),
        radius: 999.0,
        color: V(0.8, 0.8, 0.7),
        mirror: 0.1,
    }];
    for i in 0..9 {
        let a = i as f64 * 0.7 + t;
        spheres.push(Sphere {
            center: V(
                a.cos() * 2.5,
                0.2 + (i % 3) as f64 * 0.6,
                6.0 + a.sin() * 2.0,
            ),
            radius: 0.5,
            color: V(0.3 + 0.07 * i as f64, 0.4, 0.9 - 0.08 * i as f64),
            mirror: if i % 2 == 0 { 0.5 } else { 0.0 },
        });
    }
    spheres
}

fn hit(spheres: &[Sphere], origin: V, dir: V) -> Option<(f64, &Sphere)> {
    let mut best: Option<(f64, &Sphere)> = None;
    for s in spheres {
        let oc = origin.sub(s.center);
        let b = oc.dot(dir);
        let c = oc.dot(oc) - s.radius * s.radius;
        let disc = b * b - c;
        if disc > 0.0 {
            let t = -b - disc.sqrt();
            if t > 1e-4 && best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, s));
            }
        }
    }
    best
}

fn trace(spheres: &[Sphere], origin: V, dir: V, depth: u32) -> V {
    let Some((t, s)) = hit(spheres, origin, dir) else {
        return V(0.6, 0.75, 1.0).mul(0.5 + 0.5 * dir.1.max(0.0));
    };
    let p = origin.add(dir.mul(t));
    let n = p.sub(s.center).norm();
    let light = V(-0.5, 1.0, -0.3).norm();
    let shadow = hit(spheres, p, light).is_some();
    let diffuse = if shadow { 0.1 } else { n.dot(light).max(0.0) };
    let mut color = s.color.mul(0.1 + 0.9 * diffuse);
    if s.mirror > 0.0 && depth < MAX_DEPTH {
        let reflected = dir.sub(n.mul(2.0 * dir.dot(n)));
        color = color
            .mul(1.0 - s.mirror)
            .add(trace(spheres, p, reflected, depth + 1).mul(s.mirror));
    }
    color
}

#[metron::profile(bundle = TileCost)]
fn render_tile(spheres: &[Sphere], tile: usize, image: &mut [[u8; 3]]) {
    let tiles_x = WIDTH.div_ceil(TILE);
    let (tx, ty) = (tile % tiles_x * TILE, tile / tiles_x * TILE);
    for y in ty..(ty + TILE).min(HEIGHT) {
        for x in tx..(tx + TILE).min(WIDTH) {
            let _shade = metron::scope!("shade pixel");
            let dir = V(
                (x as f64 - WIDTH as f64 / 2.0) / HEIGHT as f64,
                (HEIGHT as f64 / 2.0 - y as f64) / HEIGHT as f64,
                1.0,
            )
            .norm();
            let c = trace(spheres, V(0.0, 1.0, 0.0), dir, 0);
            image[y * WIDTH + x] = [c.0, c.1, c.2].map(|v| (v.clamp(0.0, 1.0) * 255.0) as u8);
        }
    }
}

#[metron::profile]
fn render_frame(frame: usize) -> Vec<[u8; 3]> {
    let spheres = Arc::new(scene(frame));
    let tiles = WIDTH.div_ceil(TILE) * HEIGHT.div_ceil(TILE);
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|w| {
            let (spheres, next) = (Arc::clone(&spheres), Arc::clone(&next));
            std::thread::Builder::new()
                .name(format!("render-{w}"))
                .spawn(move || {
                    let mut image = vec![[0u8; 3]; WIDTH * HEIGHT];
                    let mut mine = Vec::new();
                    loop {
                        let tile = next.fetch_add(1, Ordering::Relaxed);
                        if tile >= tiles {
                            break;
                        }
                        metron::counter!("tiles left", tiles - tile - 1);
                        render_tile(&spheres, tile, &mut image);
                        mine.push(tile);
                    }
                    (image, mine)
                })
                .expect("spawn a render thread")
        })
        .collect();
    let mut image = vec![[0u8; 3]; WIDTH * HEIGHT];
    for worker in workers {
        let (part, mine) = worker.join().expect("render thread");
        let tiles_x = WIDTH.div_ceil(TILE);
        for tile in mine {
            let (tx, ty) = (tile % tiles_x * TILE, tile / tiles_x * TILE);
            for y in ty..(ty + TILE).min(HEIGHT) {
                let row = y * WIDTH;
                image[row + tx..row + (tx + TILE).min(WIDTH)]
                    .copy_from_slice(&part[row + tx..row + (tx + TILE).min(WIDTH)]);
            }
        }
    }
    metron::mark!("frame done");
    image
}

fn main() {
    let mut last = Vec::new();
    for frame in 0..FRAMES {
        last = render_frame(frame);
    }
    let ppm_path = std::env::temp_dir().join("metron-quickstart.ppm");
    {
        let _write = metron::scope!("write image");
        let mut ppm = format!("P6 {WIDTH} {HEIGHT} 255\n").into_bytes();
        ppm.extend(last.iter().flatten());
        std::fs::write(&ppm_path, ppm).expect("write the image");
    }
    println!(
        "rendered {FRAMES} frames of {WIDTH}x{HEIGHT} on {THREADS} threads; last frame: {}",
        ppm_path.display()
    );
    if let Some(report) = metron::finish() {
        println!("profile: {}", report.output_dir.display());
        for file in &report.files {
            println!("  {}", file.display());
        }
    }
}
