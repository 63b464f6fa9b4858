// Covers: util.initializer computing global values (i32, i64, f32) at module init, read by exports.
util.global private mutable @seed : i32
util.global private @base64 : i64
util.global private @scale : f32
util.initializer {
  %c = arith.constant 12345 : i32
  util.global.store %c, @seed : i32
  %b = arith.constant 1099511627776 : i64
  util.global.store %b, @base64 : i64
  %s = arith.constant 0.25 : f32
  util.global.store %s, @scale : f32
  util.return
}

func.func @next_random(%x: i32) -> (i32, i64, f32) {
  %s = util.global.load @seed : i32
  %m = arith.constant 1103515245 : i32
  %a = arith.constant 12345 : i32
  %t = arith.muli %s, %m : i32
  %n0 = arith.addi %t, %a : i32
  %n = arith.xori %n0, %x : i32
  util.global.store %n, @seed : i32
  %b = util.global.load @base64 : i64
  %xe = arith.extsi %x : i32 to i64
  %r = arith.addi %b, %xe : i64
  %sc = util.global.load @scale : f32
  %xf = arith.sitofp %x : i32 to f32
  %rf = arith.mulf %xf, %sc : f32
  return %n, %r, %rf : i32, i64, f32
}
