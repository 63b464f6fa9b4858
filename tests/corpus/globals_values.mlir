// Covers: mutable util.global of i32/i64/f32/f64 value types (load/store across calls) plus immutable value globals.
util.global private mutable @counter = 0 : i32
util.global private mutable @total = 0 : i64
util.global private mutable @acc = 0.0 : f32
util.global private mutable @acc64 = 0.0 : f64
util.global private @step = 3 : i32

func.func @bump(%x: i32, %y: i64, %f: f32, %d: f64) -> (i32, i64, f32, f64) {
  %c = util.global.load @counter : i32
  %s = util.global.load @step : i32
  %c1 = arith.addi %c, %s : i32
  %c2 = arith.addi %c1, %x : i32
  util.global.store %c2, @counter : i32
  %t = util.global.load @total : i64
  %t1 = arith.addi %t, %y : i64
  util.global.store %t1, @total : i64
  %a = util.global.load @acc : f32
  %a1 = arith.addf %a, %f : f32
  util.global.store %a1, @acc : f32
  %a64 = util.global.load @acc64 : f64
  %a64n = arith.addf %a64, %d : f64
  util.global.store %a64n, @acc64 : f64
  return %c2, %t1, %a1, %a64n : i32, i64, f32, f64
}

func.func @read_counter() -> i32 {
  %c = util.global.load @counter : i32
  return %c : i32
}
