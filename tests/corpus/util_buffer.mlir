// Covers: util.buffer alloc/store/load/fill/copy/compare/size/constant (i8/i16/i32/i64/f32 access) -> vm.buffer.* ops.
func.func @buffer_ops(%x: i32, %y: i64, %f: f32, %k: i32) -> (i32, i64, f32, i1, index, i32, i8, i16) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c24 = arith.constant 24 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c15 = arith.constant 15 : i32
  %km = arith.andi %k, %c15 : i32
  %ko = arith.index_cast %km : i32 to index
  %size = arith.addi %c64, %ko : index
  %buf = util.buffer.alloc uninitialized : !util.buffer{%size}
  %fillv = arith.constant 165 : i8
  util.buffer.fill %fillv, %buf[%c0 for %size] : i8 -> !util.buffer{%size}
  util.buffer.store %x, %buf[%c4 for %c4] : i32 -> !util.buffer{%size}
  util.buffer.store %y, %buf[%c8 for %c8] : i64 -> !util.buffer{%size}
  util.buffer.store %f, %buf[%c16 for %c4] : f32 -> !util.buffer{%size}
  %lx = util.buffer.load %buf[%c4 for %c4] : !util.buffer{%size} -> i32
  %ly = util.buffer.load %buf[%c8 for %c8] : !util.buffer{%size} -> i64
  %lf = util.buffer.load %buf[%c16 for %c4] : !util.buffer{%size} -> f32
  %l8 = util.buffer.load %buf[%c4 for %c1] : !util.buffer{%size} -> i8
  %l16 = util.buffer.load %buf[%c4 for %c2] : !util.buffer{%size} -> i16
  util.buffer.copy %buf[%c0], %buf[%c32], %c24 : !util.buffer{%size} -> !util.buffer{%size}
  %eq = util.buffer.compare %buf[%c0], %buf[%c32], %c24 : !util.buffer{%size}, !util.buffer{%size}
  %sz = util.buffer.size %buf : !util.buffer
  %cst = util.buffer.constant : !util.buffer = dense<[10, 20, 30, 40]> : tensor<4xi32>
  %c16b = arith.constant 16 : index
  %ci = arith.andi %k, %c15 : i32
  %ci3 = arith.constant 3 : i32
  %cim = arith.andi %ci, %ci3 : i32
  %cio = arith.index_cast %cim : i32 to index
  %cbo = arith.muli %cio, %c4 : index
  %cv = util.buffer.load %cst[%cbo for %c4] : !util.buffer{%c16b} -> i32
  return %lx, %ly, %lf, %eq, %sz, %cv, %l8, %l16 : i32, i64, f32, i1, index, i32, i8, i16
}

// 16-bit and 32-bit fills at element granularity, then a compare that fails.
func.func @buffer_fill_widths(%v: i32, %w: i16) -> (i1, i32, i16) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %buf = util.buffer.alloc uninitialized : !util.buffer{%c32}
  util.buffer.fill %v, %buf[%c0 for %c16] : i32 -> !util.buffer{%c32}
  util.buffer.fill %w, %buf[%c16 for %c16] : i16 -> !util.buffer{%c32}
  %eq = util.buffer.compare %buf[%c0], %buf[%c16], %c16 : !util.buffer{%c32}, !util.buffer{%c32}
  %a = util.buffer.load %buf[%c8 for %c4] : !util.buffer{%c32} -> i32
  %b = util.buffer.load %buf[%c16 for %c2] : !util.buffer{%c32} -> i16
  return %eq, %a, %b : i1, i32, i16
}
