// Covers: host casts: sitofp/uitofp/fptosi/fptoui (i32,i64<->f32; not uitofp i64->f32), extsi/extui/trunci (i8,i16,i32,i64), bitcast i32<->f32, index_cast.
// (uitofp i64->f32 lives in arith_cast_ui64_f32.mlir: its vm.cast.ui64.f32 aborts iree-dump-module.)
func.func @int_float_casts(%i: i32, %l: i64, %f: f32) -> (f32, f32, f32, i32, i32, i64, i64) {
  %a = arith.sitofp %i : i32 to f32
  %b = arith.uitofp %i : i32 to f32
  %c = arith.sitofp %l : i64 to f32
  %e = arith.fptosi %f : f32 to i32
  %af = math.absf %f : f32
  %g = arith.fptoui %af : f32 to i32
  %h = arith.fptosi %f : f32 to i64
  %k = arith.fptoui %af : f32 to i64
  return %a, %b, %c, %e, %g, %h, %k : f32, f32, f32, i32, i32, i64, i64
}

func.func @int_width_casts(%i: i32, %l: i64) -> (i32, i32, i32, i32, i64, i64, i32, i64, i32, i32) {
  %t8 = arith.trunci %i : i32 to i8
  %t16 = arith.trunci %i : i32 to i16
  %s8 = arith.extsi %t8 : i8 to i32
  %u8 = arith.extui %t8 : i8 to i32
  %s16 = arith.extsi %t16 : i16 to i32
  %u16 = arith.extui %t16 : i16 to i32
  %sx = arith.extsi %i : i32 to i64
  %ux = arith.extui %i : i32 to i64
  %tl = arith.trunci %l : i64 to i32
  %t8l = arith.trunci %l : i64 to i8
  %s8l = arith.extsi %t8 : i8 to i64
  %u8i = arith.extui %t8l : i8 to i32
  %idx = arith.index_cast %l : i64 to index
  %idxi = arith.index_castui %idx : index to i32
  return %s8, %u8, %s16, %u16, %sx, %ux, %tl, %s8l, %u8i, %idxi : i32, i32, i32, i32, i64, i64, i32, i64, i32, i32
}

func.func @bitcasts(%i: i32, %f: f32) -> (f32, i32) {
  %a = arith.bitcast %i : i32 to f32
  %b = arith.bitcast %f : f32 to i32
  return %a, %b : f32, i32
}
