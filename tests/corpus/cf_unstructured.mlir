// Covers: unstructured cf.br / cf.cond_br / cf.switch with block arguments (gcd loop + flag switch).
func.func @gcd(%a0: i32, %b0: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %a = math.absi %a0 : i32
  %b = math.absi %b0 : i32
  cf.br ^loop(%a, %b : i32, i32)
^loop(%x: i32, %y: i32):
  %z = arith.cmpi eq, %y, %c0 : i32
  cf.cond_br %z, ^done(%x : i32), ^body(%x, %y : i32, i32)
^body(%p: i32, %q: i32):
  %r = arith.remui %p, %q : i32
  cf.br ^loop(%q, %r : i32, i32)
^done(%g: i32):
  return %g : i32
}

func.func @flag_switch(%flag: i32, %v: f32) -> f32 {
  cf.switch %flag : i32, [
    default: ^other(%v : f32),
    1: ^one,
    3: ^three(%v, %v : f32, f32)
  ]
^one:
  %c = arith.constant 1.5 : f32
  %r1 = arith.addf %v, %c : f32
  return %r1 : f32
^three(%p: f32, %q: f32):
  %r3 = arith.mulf %p, %q : f32
  return %r3 : f32
^other(%o: f32):
  %r0 = arith.negf %o : f32
  return %r0 : f32
}
