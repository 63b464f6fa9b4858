// Covers: nested scf.if with multiple results of mixed types (i32, i64, f32) on host scalars.
func.func @classify(%x: i32, %y: i64, %f: f32) -> (i32, i64, f32) {
  %c0 = arith.constant 0 : i32
  %c10 = arith.constant 10 : i32
  %neg = arith.cmpi slt, %x, %c0 : i32
  %r:3 = scf.if %neg -> (i32, i64, f32) {
    %a = arith.subi %c0, %x : i32
    %b = arith.subi %y, %y : i64
    %n = arith.negf %f : f32
    scf.yield %a, %b, %n : i32, i64, f32
  } else {
    %big = arith.cmpi sgt, %x, %c10 : i32
    %q:3 = scf.if %big -> (i32, i64, f32) {
      %a = arith.muli %x, %c10 : i32
      %b = arith.addi %y, %y : i64
      %d = arith.addf %f, %f : f32
      scf.yield %a, %b, %d : i32, i64, f32
    } else {
      %b = arith.muli %y, %y : i64
      scf.yield %x, %b, %f : i32, i64, f32
    }
    scf.yield %q#0, %q#1, %q#2 : i32, i64, f32
  }
  return %r#0, %r#1, %r#2 : i32, i64, f32
}
