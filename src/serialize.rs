//! The bulk bytes of the safetensors layout: writing tensors after a header
//! and reading or mapping them back by byte range.
//!
//! A safetensors file is an 8-byte little-endian header length `n`, `n`
//! bytes of JSON, then the tensors' raw little-endian elements. The JSON
//! (names, dtypes, shapes, offsets, metadata) is built and checked by the
//! Python layer (`ferrograd/serialization.py`), where it is a few hundred
//! bytes per tensor; this module moves the elements, without the GIL, and
//! checks every byte range itself so a caller can never make it read or
//! map memory outside the file.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::io::AsRawFd;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::tensor::{DType, Element, Shape, Storage, Tensor};

#[cfg(not(target_endian = "little"))]
compile_error!("the safetensors layout is little-endian; big-endian hosts would need byte swaps");

/// Why a read or write failed: the operating system, or the file's content.
#[derive(Debug)]
pub enum SerError {
    Io(io::Error),
    Format(String),
}

impl From<io::Error> for SerError {
    fn from(e: io::Error) -> Self {
        SerError::Io(e)
    }
}

pub type SerResult<T> = std::result::Result<T, SerError>;

/// One tensor's place in a file: absolute byte range `[start, start + nbytes)`.
pub struct Entry {
    pub name: String,
    pub dtype: DType,
    pub shape: Shape,
    pub start: u64,
    pub nbytes: u64,
}

/// The safetensors name of a dtype.
pub fn st_name(dt: DType) -> &'static str {
    match dt {
        DType::Bool => "BOOL",
        DType::I64 => "I64",
        DType::F32 => "F32",
        DType::F64 => "F64",
        DType::U8 => "U8",
        DType::I8 => "I8",
        DType::I16 => "I16",
        DType::I32 => "I32",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
    }
}

/// The dtype a safetensors name stands for, if ferrograd has it.
pub fn from_st_name(name: &str) -> Option<DType> {
    Some(match name {
        "BOOL" => DType::Bool,
        "I64" => DType::I64,
        "F32" => DType::F32,
        "F64" => DType::F64,
        "U8" => DType::U8,
        "I8" => DType::I8,
        "I16" => DType::I16,
        "I32" => DType::I32,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        _ => return None,
    })
}

/// A contiguous tensor's elements as bytes.
fn bytes_of(t: &Tensor) -> (Tensor, usize) {
    let t = t.contiguous_data();
    let n = t.numel() * t.dtype().size();
    (t, n)
}

fn with_bytes<R>(t: &Tensor, f: impl FnOnce(&[u8]) -> R) -> R {
    let v = t.view();
    let n = v.numel() * v.dtype().size();
    let ptr = crate::dispatch!(v.dtype(), T => v.ptr::<T>() as *const u8);
    // SAFETY: `t` is contiguous (callers pass `bytes_of`'s result), so its
    // `numel` elements start at `ptr` inside the storage, which the read
    // guard keeps alive; every dtype here is plain bytes (bool is 0 or 1).
    let bytes = if n == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(ptr, n) }
    };
    f(bytes)
}

/// The CRC-32C of each tensor's elements, laid out contiguously (what
/// `write_all` writes for it), computed on the thread pool.
pub fn crc32c_of(tensors: &[Tensor]) -> Vec<u32> {
    let conts: Vec<Tensor> = tensors.iter().map(|t| bytes_of(t).0).collect();
    let views: Vec<_> = conts.iter().map(|t| t.view()).collect();
    let slices: Vec<&[u8]> = views
        .iter()
        .map(|v| {
            let n = v.numel() * v.dtype().size();
            if n == 0 {
                return &[][..];
            }
            let ptr = crate::dispatch!(v.dtype(), T => v.ptr::<T>() as *const u8);
            // SAFETY: each view is contiguous (from `bytes_of`), so its `n`
            // bytes start at `ptr` inside a storage the guard keeps alive.
            unsafe { std::slice::from_raw_parts(ptr, n) }
        })
        .collect();
    crate::checksum::crc32c_many(&slices)
}

/// Total bytes `write_all` emits for this header and these tensors.
pub fn total_len(header: &[u8], tensors: &[Tensor]) -> usize {
    8 + header.len()
        + tensors
            .iter()
            .map(|t| t.numel() * t.dtype().size())
            .sum::<usize>()
}

/// Writes the length prefix, the header and each tensor's elements in order.
/// The header's offsets must describe exactly this order (the caller built it).
pub fn write_all(w: &mut impl Write, header: &[u8], tensors: &[Tensor]) -> io::Result<()> {
    w.write_all(&(header.len() as u64).to_le_bytes())?;
    w.write_all(header)?;
    for t in tensors {
        let (t, _) = bytes_of(t);
        with_bytes(&t, |b| w.write_all(b))?;
    }
    Ok(())
}

/// Writes a whole file at `path` (created or truncated), then flushes it to
/// the disk when `sync` so a rename after it cannot expose a partial file.
pub fn write_file(
    path: &std::path::Path,
    header: &[u8],
    tensors: &[Tensor],
    sync: bool,
) -> io::Result<()> {
    let file = File::create(path)?;
    // Large writes straight from the tensors' memory: no staging buffer.
    let mut w = Progress {
        inner: io::BufWriter::with_capacity(1 << 16, &file),
        fd: file.as_raw_fd(),
        sync,
        written: 0,
        flushed: 0,
    };
    write_all(&mut w, header, tensors)?;
    w.flush()?;
    drop(w);
    if sync {
        file.sync_all()?;
    }
    Ok(())
}

/// A writer that, when the file will be synced, asks the kernel to start
/// writing each finished stretch to the disk while later ones are still
/// being copied, so the final fsync waits for the tail only.
struct Progress<'a> {
    inner: io::BufWriter<&'a File>,
    fd: i32,
    sync: bool,
    written: u64,
    flushed: u64,
}

const WRITEBACK_STEP: u64 = 32 << 20;

impl Write for Progress<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        if self.sync && self.written - self.flushed >= WRITEBACK_STEP {
            self.inner.flush()?;
            // SAFETY: a plain syscall on our open descriptor; a failure only
            // means the final fsync does all the work.
            unsafe {
                libc::sync_file_range(
                    self.fd,
                    self.flushed as libc::off64_t,
                    (self.written - self.flushed) as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
            self.flushed = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn check_entry(e: &Entry, file_len: u64) -> SerResult<usize> {
    let numel = crate::tensor::checked_numel(&e.shape)
        .map_err(|_| SerError::Format(format!("tensor '{}': shape overflows", e.name)))?;
    let want = (numel as u64).checked_mul(e.dtype.size() as u64);
    if want != Some(e.nbytes) {
        return Err(SerError::Format(format!(
            "tensor '{}': {} bytes for shape {:?} of {} (needs {})",
            e.name,
            e.nbytes,
            e.shape.as_slice(),
            st_name(e.dtype),
            want.map_or("too many".into(), |w| w.to_string())
        )));
    }
    match e.start.checked_add(e.nbytes) {
        Some(end) if end <= file_len => Ok(numel),
        _ => Err(SerError::Format(format!(
            "tensor '{}': bytes {}..{} lie beyond the end of the file ({} bytes); the file is truncated or corrupt",
            e.name,
            e.start,
            e.start.saturating_add(e.nbytes),
            file_len
        ))),
    }
}

fn check_bools(name: &str, bytes: &[u8]) -> SerResult<()> {
    if bytes.iter().any(|&b| b > 1) {
        return Err(SerError::Format(format!(
            "tensor '{name}': a BOOL element holds a byte other than 0 or 1; the file is corrupt"
        )));
    }
    Ok(())
}

/// Writes exactly `len` bytes at a pointer, or fails.
type Fill<'a> = dyn FnMut(*mut u8, usize) -> SerResult<()> + 'a;

/// A new tensor whose memory `fill` writes. The buffer is never zeroed
/// first: memory the allocator hands back from earlier tensors would have to
/// be cleared by a pass as long as the read itself.
fn new_tensor<T: Element>(e: &Entry, numel: usize, fill: &mut Fill<'_>) -> SerResult<Tensor> {
    let mut v: Vec<T> = Vec::with_capacity(numel);
    fill(v.as_mut_ptr() as *mut u8, numel * std::mem::size_of::<T>())?;
    // SAFETY: `fill` wrote all `numel` elements, and every bit pattern is a
    // valid integer or float (bool goes through `read_one`'s check instead).
    unsafe { v.set_len(numel) };
    Ok(Tensor::from_vec(v, e.shape.clone()))
}

fn read_one(e: &Entry, numel: usize, fill: &mut Fill<'_>) -> SerResult<Tensor> {
    match e.dtype {
        DType::Bool => {
            // Read as bytes and checked before they become `bool`s: any
            // other byte value in a `bool` is undefined behaviour.
            let mut v: Vec<u8> = Vec::with_capacity(numel);
            fill(v.as_mut_ptr(), numel)?;
            // SAFETY: `fill` wrote all `numel` bytes.
            unsafe { v.set_len(numel) };
            check_bools(&e.name, &v)?;
            let mut v = std::mem::ManuallyDrop::new(v);
            // SAFETY: every byte is 0 or 1, and bool has u8's size and alignment.
            let v =
                unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut bool, v.len(), v.capacity()) };
            Ok(Tensor::from_vec(v, e.shape.clone()))
        }
        DType::I64 => new_tensor::<i64>(e, numel, fill),
        DType::F32 => new_tensor::<f32>(e, numel, fill),
        DType::F64 => new_tensor::<f64>(e, numel, fill),
        DType::U8 => new_tensor::<u8>(e, numel, fill),
        DType::I8 => new_tensor::<i8>(e, numel, fill),
        DType::I16 => new_tensor::<i16>(e, numel, fill),
        DType::I32 => new_tensor::<i32>(e, numel, fill),
        DType::F16 => new_tensor::<crate::tensor::f16>(e, numel, fill),
        DType::BF16 => new_tensor::<crate::tensor::bf16>(e, numel, fill),
    }
}

/// Reads every entry through `fill`, on the pool's threads when the data is
/// large: the copies and the page faults of the fresh buffers both spread.
fn read_all(
    entries: &[Entry],
    len: u64,
    fill: impl Fn(&Entry, *mut u8, usize) -> SerResult<()> + Sync,
) -> SerResult<Vec<Tensor>> {
    let numels = entries
        .iter()
        .map(|e| check_entry(e, len))
        .collect::<SerResult<Vec<_>>>()?;
    let total: u64 = entries.iter().map(|e| e.nbytes).sum();
    let one = |i: usize| read_one(&entries[i], numels[i], &mut |p, n| fill(&entries[i], p, n));
    if total < PARALLEL_BYTES || entries.len() < 2 {
        return (0..entries.len()).map(one).collect();
    }
    let slots: Vec<Mutex<Option<SerResult<Tensor>>>> =
        entries.iter().map(|_| Mutex::new(None)).collect();
    crate::kernels::parallel::tasks(entries.len(), |i| {
        *slots[i].lock() = Some(one(i));
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().expect("every read task ran"))
        .collect()
}

/// Below this many bytes one thread reads everything.
const PARALLEL_BYTES: u64 = 4 << 20;

/// Reads each entry from `file` into a new tensor of its own.
pub fn read_file(file: &File, entries: &[Entry]) -> SerResult<Vec<Tensor>> {
    let len = file.metadata()?.len();
    let fd = file.as_raw_fd();
    read_all(entries, len, |e, ptr, n| {
        let mut done = 0usize;
        while done < n {
            // SAFETY: `ptr` is valid for `n` bytes (the new tensor's buffer).
            let r = unsafe {
                libc::pread(
                    fd,
                    ptr.add(done) as *mut libc::c_void,
                    n - done,
                    (e.start + done as u64) as libc::off_t,
                )
            };
            if r < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(SerError::Io(err));
            }
            if r == 0 {
                return Err(SerError::Format(format!(
                    "tensor '{}': the file ended while reading it; it is truncated",
                    e.name
                )));
            }
            done += r as usize;
        }
        Ok(())
    })
}

/// Copies each entry out of an in-memory file into a new tensor.
pub fn read_bytes(data: &[u8], entries: &[Entry]) -> SerResult<Vec<Tensor>> {
    read_all(entries, data.len() as u64, |e, ptr, n| {
        let src = &data[e.start as usize..e.start as usize + n];
        // SAFETY: `ptr` is valid for `n` bytes and is a fresh buffer.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), ptr, n) };
        Ok(())
    })
}

/// A private, copy-on-write mapping of a whole file, unmapped when the last
/// storage viewing it is dropped.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

// The mapping is plain memory owned by this value until `Drop`.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what `mmap` returned.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

/// Maps `file` and returns tensors viewing it. The mapping is `MAP_PRIVATE`
/// with write permission: an in-place write copies the touched page for this
/// process and never reaches the file. A tensor whose bytes are not aligned
/// for its dtype (possible in files other writers made) is copied instead.
pub fn map_file(file: &File, entries: &[Entry]) -> SerResult<Vec<Tensor>> {
    let len = file.metadata()?.len();
    let numels = entries
        .iter()
        .map(|e| check_entry(e, len))
        .collect::<SerResult<Vec<_>>>()?;
    if len == 0 || entries.iter().all(|e| e.nbytes == 0) {
        return read_file(file, entries);
    }
    let len_usize = usize::try_from(len)
        .map_err(|_| SerError::Format("the file is too large to map".into()))?;
    // SAFETY: a fresh private mapping of a file we hold open; checked below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len_usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(SerError::Io(io::Error::last_os_error()));
    }
    let map = Arc::new(Mapping {
        ptr,
        len: len_usize,
    });
    let base = ptr as *mut u8;
    let mut out = Vec::with_capacity(entries.len());
    for (e, numel) in entries.iter().zip(numels) {
        // SAFETY: `check_entry` put `[start, start + nbytes)` inside the mapping.
        let p = unsafe { base.add(e.start as usize) };
        let aligned = (p as usize).is_multiple_of(e.dtype.size());
        if numel == 0 || !aligned {
            out.push(read_one(e, numel, &mut |dst, n| {
                // SAFETY: `p` has `nbytes == n` mapped bytes; `dst` is fresh.
                unsafe { std::ptr::copy_nonoverlapping(p, dst, n) };
                Ok(())
            })?);
            continue;
        }
        if e.dtype == DType::Bool {
            check_bools(&e.name, unsafe {
                std::slice::from_raw_parts(p, e.nbytes as usize)
            })?;
        }
        // SAFETY: aligned, in bounds, valid values for the dtype (bools
        // checked), and the Arc keeps the mapping alive as long as the storage.
        let storage =
            unsafe { Storage::from_external(p, numel, e.dtype, Box::new(Arc::clone(&map))) };
        out.push(Tensor::from_view(
            crate::tensor::View::contiguous(storage, e.shape.clone()),
            None,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, dtype: DType, shape: &[usize], start: u64) -> Entry {
        let nbytes = (shape.iter().product::<usize>() * dtype.size()) as u64;
        Entry {
            name: name.into(),
            dtype,
            shape: shape.iter().copied().collect(),
            start,
            nbytes,
        }
    }

    #[test]
    fn bytes_round_trip_and_ranges_are_checked() {
        let a = Tensor::from_vec(vec![1.5f32, -2.0, 3.25], [3].into_iter().collect());
        let b = Tensor::from_vec(vec![true, false], [2].into_iter().collect());
        let mut buf = Vec::new();
        write_all(&mut buf, b"{}", &[a, b]).unwrap();
        assert_eq!(buf.len(), 8 + 2 + 12 + 2);
        let es = [
            entry("a", DType::F32, &[3], 10),
            entry("b", DType::Bool, &[2], 22),
        ];
        let got = read_bytes(&buf, &es).unwrap();
        assert_eq!(got[0].to_vec::<f32>(), vec![1.5, -2.0, 3.25]);
        assert_eq!(got[1].to_vec::<bool>(), vec![true, false]);
        // One byte past the end, and a byte count that disagrees with the shape.
        assert!(read_bytes(&buf, &[entry("a", DType::F32, &[3], 13)]).is_err());
        let mut bad = entry("a", DType::F32, &[3], 10);
        bad.nbytes = 8;
        assert!(read_bytes(&buf, &[bad]).is_err());
        buf[22] = 7;
        assert!(read_bytes(&buf, &es).is_err());
    }
}
