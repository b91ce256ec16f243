// Lower bounds on the total latency of any valid schedule of a problem (spec
// docs/cost-model.md; rule ids cited below).
//
// Every step costs max(compute, memory) (T1) and the total is the sum of the steps (T2), so for
// every valid schedule and every a in [0, 1]:
//     total >= a * C + (1 - a) * M,   C = sum of compute terms, M = sum of memory terms (M3).
// a = 1 gives the compute bound, a = 0 the traffic bound; the "combined" bound maximises over a
// after choosing, per op, the cheapest way (its "mode") it could run. Nothing here knows the
// schedule; every claim below holds for every schedule the oracle accepts.
//
// Modes. In a subgraph S an op's output is demanded in one or more of these ways (D1-D3, G3):
//   T   tile: a k-loop MatMul (F) or an epilogue / Pointwise-only op, one output tile per tile;
//   SL  the LHS strip R x kappa_j of a k-loop MatMul (directly, or through Pointwise ops);
//   SR  the RHS strip kappa_j x C of a k-loop MatMul;
//   FL  the LHS of an upstream MatMul, which needs rows x its full reduction (all columns);
//   FR  the RHS of an upstream MatMul (all rows).
// A MatMul demanded T asks its producers for strips (SL by its LHS, SR by its RHS); demanded in
// any other mode it asks them for FL / FR (D3); a Pointwise op passes its own mode on.
//
// Facts used, each a consequence of the rules as the oracle applies them:
//  P1 (V11, V2, V3) A k-loop MatMul with K > n always splits k (k <= n < K), so a Pointwise
//     producer inside the subgraph feeding its LHS or RHS is illegal (it would need w or h >= K).
//  P2 (D3, D5, W) A MatMul demanded FL requests [0,K) x all columns of its RHS: the whole RHS.
//     When that RHS has no producer (graph input) and |RHS| + 1 > capacity the step cannot fit
//     (the sink tile adds at least one element). FR likewise with the LHS.
//  P3 (R4, M1) Fast memory starts each subgraph empty apart from retained tensors, and a request
//     is free only when the identical slice or the whole tensor was requested in the step
//     before, so every element of a boundary tensor an op requests is loaded at least once per
//     subgraph, unless the tensor was retained by the previous subgraph.
//  P4 (V8, R5, W) Only a tensor produced by the previous subgraph can be retained (never a
//     graph input), and it occupies its full size in every step of the consumer, beside at
//     least one element of sink tile: a tensor with |t| + 1 > capacity is never retained.
//  P5 (G2, D2, M1) Streaming. A MatMul c in F with K > n has n_k = ceil(K/k) >= 2 k-steps per
//     tile, so its LHS slice R x kappa_j differs from every slice it requested in the step
//     before (consecutive steps have different k-ranges, also across a tile boundary) and is
//     never the whole tensor. If no other op of the subgraph requests that tensor and no request
//     of c itself covers the whole tensor (|t| + 1 > capacity, or c can only be demanded T), every
//     slice is loaded: sum over tiles of |R| x K = |LHS| x ceil(N/w) >= |LHS| x ceil(N/n) (edge
//     tiles clipped, D4). RHS: |RHS| x ceil(M/n).
//  P6 (C3, D3) A MatMul c demanded SL by a k-loop MatMul f (c's output is f's LHS, K_f > n)
//     requests [0,K_c) x kappa_j of its RHS every step, a different slice each step: when c is
//     the RHS's only requester and the whole RHS cannot fit, the RHS is loaded once per tile of
//     f: |RHS_c| x ceil(M_f/n) x ceil(N_f/n). SR symmetric with the LHS.
//  P7 (C1-C3, C6) An op computes its whole output at least once (V1): base x native tiles. An op
//     demanded SL makes the whole strip R x [0,K*) again for every tile of the row (strict
//     recomputation, C6), so at least ceil(N_f/n) times its native tiles; SR: ceil(M_f/n).
//  P8 (V7, M2) A boundary input that is loaded must be in slow memory, so it was written once
//     (|t|, the sum of its clipped tiles), unless it is a graph input; a graph output is written
//     at least once (V9). An op's input is ephemeral only if its producer is in the subgraph.
//  P9 (V5) The ops of a subgraph are connected through internal edges, each legal for the modes
//     its two ends are in (P1, P2 checked edge by edge, and through an op entered by one edge and
//     left by another in a different mode). Two consumers of a tensor that no such chain of edges
//     connects never share a subgraph, so their loads add up; consumers that may share one are
//     charged |t| once for all of them, and then only when none can see the tensor ephemeral or
//     retained. The walk that finds such chains gives up past 4,096 (op, mode, entry) states
//     and then counts every op as reachable: more sharing, never a higher bound (problems under
//     273 ops never reach that; very deep graphs lose some of P9 and P10, not validity).
//  P10 (W, P6) Strip producers sharing one streamed weight t (graph input, too large to fit):
//     members that can only be T (a sink, then alone) or SL toward k-loop MatMuls with K > n,
//     each reading an LHS only it reads and that cannot be ephemeral. In a subgraph with g' of
//     them every step holds all their LHS strips h' x K_c, so h' <= (capacity-1) / sum K_c and
//     the k-loop has >= M x sum K_c / (capacity-1) row tiles, each loading all of t (P6). Each
//     member's SL mode is charged |t| x max(min(1, min_c |LHS_c| / (capacity-1)), 1/g): the
//     charges of any group stay below its load.
//  P11 (M1, W) A MatMul with K <= n that alone reads both its operands (loaded, mode T only):
//     with k = K a tile's LHS strip is free only after a tile of the same row, its RHS strip only
//     after one of the same column, so every tile loads >= K x min(|R|, |C|); the tile (0,0)
//     step holds both strips and the output tile (h'K + Kw' + h'w' <= capacity). With k < K,
//     P5's streaming. The least over every w, h of both regimes.
//  P12 (V5, L1, L2) Islands. Join two ops when an edge between them is feasible (P1, P2) in some
//     mode of its consumer. Every internal edge of a valid subgraph is, so every subgraph lies in
//     one island, and the total is the sum over islands of their subgraphs' latencies, each at
//     least max(that island's compute, its traffic / B). An island's compute is at least its
//     ops' base x native tiles (P7). Its traffic includes a graph input one of its ops reads
//     (P3, V8; the least over modes of P5/P6 when one op of the island reads it once), a graph
//     output one of its ops produces (V9), and a tensor too large to retain (P4) produced in
//     another island (loaded here, P3) or consumed in another (written here, P8). A step's max
//     cannot hide one island's loads under another island's compute, which the global
//     a * C + (1 - a) * M does.
//  P13 (C3, C6, D3) Full modes. An op x demanded FL or FR makes a region full along one side
//     every step (the oracle charges base x ceil(rows/n) x ceil(cols/n) per step, no k scaling):
//     along the other side the region is the tile's rows (each row of tiles repeats it for
//     columns x k-steps steps), the tile's columns (rows x k-steps), a k-range (the k-ranges of a
//     tile partition it: once per tile) or everything (every step). With f the terminal k-loop
//     MatMul (M x N, reduction K), x so computes at least
//     passes(f) = min(ceil(M/n) ceil(N/n), ceil(M/n) ceil(K/n), ceil(N/n) ceil(K/n)) times its
//     native tiles; FL / FR's factor is the least passes over the terminals it can reach, each
//     with the case its path gives (an SL strip producer hands R to its LHS and the k-range to
//     its RHS, SR the k-range and C; FL keeps its case on its LHS, FR on its RHS, the other
//     operand full; Pointwise ops keep it): R ceil(N/n) ceil(K/n), C ceil(M/n) ceil(K/n), k-range
//     ceil(M/n) ceil(N/n), full the product of the three.
//  P14 (T1, T2, P3, P5, P7, P13, G3, V5, V11, V12) Weights no other op's compute can hide. Let
//     c_y = base x native tiles. A MatMul x's instance is T-only (x in F, no other mode) or other.
//     T-only, it loads W_T: its graph inputs read by x alone, streamed per column / row tile
//     when K > n (P5), plus its output when that is a graph output and this instance writes it
//     (V9; counted only at that instance, always a sink). Other, it loads W_N >= those inputs once
//     and computes >= f_N c_x (f_N: least factor of its non-T modes, P7, P13). g_x =
//     min(W_T/B - c_x, max(W_N/B - c_x, (f_N - 1) c_x)) (no second term for a graph output);
//     x is heavy when g_x > 0; an instance pays on memory when its own loads cover c_x + g_x
//     (T-only always; other when W_N/B - c_x >= g_x > (f_N - 1) c_x), else on compute.
//     Worlds: a subgraph whose F has reduction K* and sinks of shape H x W (G3, V12; Pointwise ops
//     keep shapes) holds only F (MatMuls of K*, H x W), E (Pointwise ops of H x W, whose internal
//     producers are E, F or Layout ops), U (ops with a mode upstream of the k-loop and an internal
//     path to a producer of an F input, which is a MatMul when K* > n, V11) and Layout ops; its internal edges are among the world's
//     edges (into F from a MatMul, Layout, or Pointwise when K* <= n; into E from E, F or Layout;
//     into U from anything), so it lies in one class of them (V5). For activated heavy ops H'
//     (any choice), let Hid = the members of every class in which an op of H' may pay on memory,
//     except the heavy ops that pay on memory wherever they sit in that class. Each op claims
//     the least, over where its picked instance (a graph output's writing one) can be, of: beside
//     an activated op paying on memory (ops in Hid, or paying on memory themselves) its own loads
//     W/B; elsewhere a c + (1 - a) W_T/B (T-only) or a f_N c + (1 - a) W_N/B (other; an activated
//     op is only there paying on compute). For every a in [0, 1] the total is at least the sum
//     of the claims: a subgraph with an activated instance paying on memory costs M_S >= its
//     instances' own loads (distinct tensors), and every op picked there is in Hid or pays on
//     memory; any other costs a C_S + (1 - a) M_S (P7 for C_S); each costs max(C_S, M_S) (T1,
//     T2; prefetch H5 too). At a = 1 an op outside Hid claims c, or c + g when activated. P12
//     applies it island by island, each with its own a.
//  P15 (R1, V8, P3, P14) Reloads of ops that sit alone. Let Y be the activated MatMuls y that
//     are T-only in every instance and alone among their class's requirers, whose produced
//     inputs (not from Layout ops) no other member produces or reads; l_y their size / B. Every
//     subgraph holding y pays on memory and loads them, claimed by nobody, unless the subgraph
//     before (y's host, distinct for distinct y) holds their producer and retains them. A host
//     has slack (an unclaimed activated instance paying on memory beside the producer: its own
//     loads; or an unclaimed producer instance: a c_p) unless it holds the picked instance of
//     a producer or of an activated op whose class holds one: at most F hosts. So the total
//     rises by sum_y lambda_y - F max lambda, lambda_y = min(l_y, least such slack). A T-only
//     MatMul heavy only with its produced inputs may be activated (claiming its own loads).
//  P16 (R1-R3, V7, V8, P3, P7, P8, P12, P14) Activations that cross islands. Give each island I
//     a weight a_I and a form: P12's V_I = a_I C_I + (1 - a_I) T_I / B or P14's (its ops' least
//     lines at a_I). A produced tensor t (|t| + 1 <= capacity, producer p in I) read in islands
//     J_1..J_r != I: a subgraph S_J of J running a reader finds t a boundary input, free only
//     when the subgraph before runs p and retains t (J served, V8, R2); else S_J loads |t| (P3)
//     and a subgraph of I wrote it as an unretained sink (V7, M2, R3). Served islands use
//     distinct instances of p, none of which writes t (R3): s served and one not, >= s + 1
//     instances; all served, >= r; each computes >= c_p (P7). With l_k = (1 - a_J) |t| / B
//     (largest first), w = (1 - a_I) |t| / B, sigma = a_I c_p (0 in P14's form when p may sit
//     beside an activated op paying on memory), claim_t = min(sum l + w, min_{1<=s<r} sigma s +
//     sum_{k>s} l_k + w, sigma (r - 1)), and the total is >= sum_I V_I + sum_t claim_t: neither
//     T_I nor P14's lines claim produced tensors' loads and writes or unpicked instances'
//     compute. With a weight path (H6) a step costs max(c, w / Bw, o / B) >= a c + b w / Bw +
//     (1 - a - b) o / B: each island also takes b_I, P12's form adds b_I W_I / Bw and counts its
//     other traffic at 1 - a_I - b_I, and t (produced: never a weight) travels the activation
//     path, l_k = (1 - a_J - b_J) |t| / B; P14's form (b = 0) counts t at B + Bw, its lines'.
//  P17 (T1, H5, P3, P7, V5, V8, V9, V11, R3, M2, L1, L2, L4) The memory floor. Every step costs at
//     least its memory time, so the total is at least the time of distinct transfers every
//     schedule makes, counted on the problem itself (not the decoupled image): the first load of
//     each graph input a non-Layout op reads, the first gather of each Layout output Y (|Y|), the
//     write of each graph output and of each produced X a Layout op reads (L1; only unretained
//     sinks are written, R3, M2), and reloads: for t made by a Pointwise op p, its readers c that
//     are MatMuls with K > n (p never beside them, V11), other operand a graph input, output to
//     be written (graph output, or read by a Layout op) or read only by a Pointwise epilogue e
//     of graph inputs whose output only Layout ops read: some subgraph S_c runs c beside at most
//     e (no other internal edge, V5), and retains at most their outputs (R3), which only e and
//     Layout ops read (never from a retained copy, L1). It loads |t| unless the subgraph before
//     retains t (then runs p, V8): the stretch since the previous picked S then makes t from
//     nothing useful retained, loading >= f(t) (f = |t| for graph inputs and Layout outputs,
//     else min(|t|, max over p's inputs), P7). Counted first
//     loads and gathers of t's ancestors all
//     precede t's first computation, so lie in at most one stretch: (|R_t| - 1) f(t) more. With
//     a weight path (H6) weights travel apart and f counts them 0.
//  P18 (W, W1, W4, G2, G3, C2, M1, M2, D1-D5, V2, V3, V7, V11, R3, R5, P3, P7, P9, T1) The tile
//     floor. In a subgraph where a MatMul x (M x N, reduction K) is in F, the step of the
//     top-left tile (r = min(h, M) rows, c = min(w, N) columns) holds, as distinct entries: an
//     r x c tile per F MatMul when k < K (n_k >= 2: sink tile, W4 accumulator or retained whole),
//     the sink's tile (W1; a Pointwise one when x is not a sink), x's operand slices when they
//     cannot be ephemeral (>= r and >= c; with k = K, r K and K c), and, at the last k-step, each
//     other input of x's epilogue e (D1: r c when loaded, retained or a k-loop MatMul's output;
//     min(r, K) c when k = K and a MatMul makes it from an RHS only it reads). W caps r c, so the
//     tiles number ceil(M/h) ceil(N/w), each paying base (C2); an operand never ephemeral,
//     retained nor requested whole is loaded per column (LHS) or row (RHS) tile when k < K (M1:
//     consecutive steps differ in k-range), shared by at most min(g, readers) F MatMuls. An
//     output o too large to retain, read by a non-Layout e: S_e (a subgraph running e) runs x
//     (o internal, legal for some mode of e, P9) or loads o (P3), written before by x as a sink
//     (V7, M2, R3); the load is x's when e is Pointwise. Each op's picked instance claims
//     a C + (1 - a) L of its case (other ops: a c_native + (1 - a) own loads); claims are
//     disjoint amounts of C_S and M_S, a subgraph costs >= a C_S + (1 - a) M_S (T1). Also per
//     island (P12), with only the transfers of the op's own island. 0 with a weight path (H6).
//  P19 (V2, V3, V11, P1, P4, P5, D2, D3, D5, M1, P14) Streamed activations. A MatMul x with
//     K > n whose LHS t is made by a Pointwise op (never ephemeral for x in F: k <= n < K,
//     V11), with |t| + 1 > capacity (never retained nor requested whole, P4) and read only by
//     MatMuls, all on that side: every subgraph holding x in F loads t at least |t| x ceil(N/n)
//     (P5), which its F readers may share (D5). Each reader's T instance counts the share
//     |t| ceil(N/n) / readers among its own loads in P14 (RHS: |t| ceil(M/n)); other instances
//     none; P15 then leaves t out of its reloads.
//  P21 (P12, V1, V2, V3, C2, M1, M2, R2, R3, T1, H6) A MatMul that sits alone. An island of
//     one MatMul x with K > n holds only subgraphs that run x alone, where every k <= n splits
//     each tile into n_k >= 2 k-steps that never reuse a slice: a step computes base k_j / K,
//     loads hr k_j of the LHS and k_j wc of the RHS unless retained, the last writes hr wc unless
//     the output is retained, and costs the max of compute and memory (each path apart, H6).
//     The least over every w, h, k and possible retention bounds the island (P12), and, less the
//     loads and writes of crossing tensors at the island's share, its value in P16. Not with
//     prefetch (H5), nor for A @ A. Second form: the island is x and Pointwise ops E made from
//     it: in every subgraph holding x they are epilogues, firing at each tile's last step (C4),
//     and elsewhere they compute at least base x native tiles (P7): the least over shapes and
//     over the split of E's base per tile, inputs free and no write; in P16 at a = 1, b = 0 only.
//  P22 (P7, P13, W, M1, D3, G2, V8) Upstream producers in P18. An instance of a MatMul x upstream
//     of a k-loop computes at least its least non-T factor times its native tiles (P7, P13, as
//     P14's other instances): P18's upstream line takes that factor. When SL is x's only non-T
//     mode and its RHS t is a graph input only x reads with |t| + 1 > capacity, n_k = 1 would
//     request t whole (x's region R x [0, K*), K* = x's width), so n_k >= 2 and each step loads a
//     fresh [0, K_x) x kappa_j slice (M1: only x requests t, kappa changes every step): |t| per
//     k-loop tile, >= |t| ceil(M_f/n) ceil(N_f/n) over the subgraph for the least terminal f
//     (Analysis::StripTiles); the upstream line claims it. SR symmetric with the LHS.
//  P23 (T1, T2, P3, P7, C1-C6, D1, D2, G2, G3, V1, V2, V8, V9, V12, W, W1, W4, R5) A sum that
//     cannot hold its producers. Price every op at c_o (base x native tiles) and a Pointwise op s
//     that the analysis allows mode T only, reading m outputs o_i of MatMuls x_i that only s
//     reads and that are too large to retain, at c_s + e_s. If every subgraph S costs at least
//     the prices of its ops (e_s counted in the one S picked per s: any that runs it, or the one
//     that writes a graph output), the prices sum to at most the latency (every op runs, V1; the
//     prices are >= 0); each S lies in one island, so also island by island (P12). In S every
//     op is charged >= c_o T / N (T the grid's tiles, N the native tiles of its shape: a tile
//     charges each op at least its base per native tile of its region, C1-C4; an upstream op's
//     region per tile or step covers its share, C3, C6, P13's cases), so C_S >= tau X, tau = T / N,
//     X the prices' compute. s in S is T: the grid has its shape (V12), and the top-left tile's
//     last step (D1) holds an r x c slice of each o_i made outside S (boundary, never retained,
//     R5, loaded all over the tiles, P3), a sink tile (W1), and per x_i in S (then in F, G3) its
//     accumulator r x c (W4) or, with k = K, its RHS slice K x c when that is a graph input
//     only x_i reads: W bounds r c, so tau >= tau_j for j producers inside. L(S) >= theta C_S +
//     (1 - theta) M_S: at theta = 1 / tau the slack over X is >= (1 - 1/tau) U (U the unfused
//     loads, distinct tensors), at theta = 1 it is >= (tau - 1) X0 (X0: c_s and the fused
//     producers' c): e_s = the least over j of lambda A_j + (1 - lambda) B_j, for one lambda per
//     island (several sums in one S add their A and B). A sum that may run upstream of a k-loop
//     claims nothing: there n_k >= 2 lets S run at native tiles, where other ops' compute can
//     hide its loads. 0 excess with a weight path (H6).
//  P25 (T1, T2, C1-C6, D1-D5, G2, G3, M1, M2, R5, V5, V8, V12, W, W1, W4, O8, P23) A MatMul whose
//     output leaves its subgraph. P23's frame, with a *tap* t (a MatMul whose output o_t never fits,
//     whose RHS is a graph input only t reads, read by nothing with no MatMul among its LHS's
//     ancestors, or by a priced sum alone) priced at
//     c_t + e_t. In S where t runs without o_t's readers t is a sink: S writes o_t (M2, R5) and
//     loads W_t, once per row tile when n_k >= 2 (M1), and the grid has t's shape (V12). Per class
//     of shapes (row tiles, column tiles, n_k bucket; tau = tiles / t's native tiles): where a
//     Pointwise sink fits beside t (its tile and an input slice, W, W1, W4) and a priced sum may be
//     there (tau >= its least tau_j), t claims P23's line at lambda, lambda (1 - 1/tau) M_t +
//     (1 - lambda)(tau - 1) c_t; elsewhere S holds no priced sum and all its claims are taps' of t's
//     key (output shape and K: G3, V12), at one theta per (key, class): L(S) >= theta C_S +
//     (1 - theta) M_S, each op of S counted at least f_o c_o (tau for every op, P23; T ceil(K/n) /
//     N_o for an op that may make a k-loop operand, C3; T n_k / N_o further upstream, C6). Without
//     room for a Pointwise sink the only sinks are MatMuls of the key and every other op is upstream
//     (G3, D3), within a walk up from t's LHS producer and down into upstream-capable ops and the
//     key's MatMuls: t subtracts their deficits (1 - theta f_o)^+ c_o (co-sinks: their negative own
//     values); with room, theta >= 1/tau, where no op has one. e_t = max(0, least over classes). A
//     tap read by nothing is a sink everywhere; the taps of a priced sum s join P23's claim:
//     min(min_j [P23_j + the m - j least e_t], min_j P23_j + min_{j>=1} P23_j) (a tap fused in S_s,
//     a sink elsewhere, or run only beside other instances of s, whose slack is P23's). 0 excess
//     with a weight path (H6).
//  P28 (T1, T2, V1, V7, V12, G3, M2, R5, P23, P25) A sum alone in its shape. Where a set of ops
//     (the problem, an island) holds one priced sum s of an output shape, all its producers and no
//     tap read by nothing of that shape, each subgraph of that grid holds one kind of claim only:
//     S_1 (s with j fused) P*_j = max of P23's two weights, both true of S_1; every producer not in
//     S_1 has a sink instance (S_1 loads its output, never retained, which only a sink instance
//     writes: V7, M2, R5), where it claims its P25 constant at the class's theta (no class gives a
//     lambda line: no other priced sum can be there). So the shape claims min over j of P*_j + the
//     m - j least e_x, or P25's term if larger (each bounds the shape's subgraphs alone;
//     eval/bound/sums/sole_sums.h).
//  P52 (M2, M3, G2, V10, V12, R5, W, P23, P28) The sink that a sole sum's subgraph writes: S_1 runs
//     s in mode T, so some sink of S_1 has s's shape H x W; with H W > capacity it is never
//     retained and writes every tile, so when s's output is no graph output P28's A_j counts
//     (1 - 1/tau_j)(U_j + H W / B). Only in P28's setting, where S_1 holds one claim of the shape
//     (eval/bound/sums/sole_sums.h).
//  P29 (T1, T2, V1, V7, V12, G3, M2, R5, P23, P25, P28) Several sums of one shape. Where a set of
//     ops holds 2..4 priced sums of a shape, all their producers and no tap read by nothing of it,
//     the sums' picked subgraphs fall into groups, one subgraph each: a group claims the larger of
//     (tau* - 1) sum X0 and (1 - 1/tau*) sum U (tau* the largest of its sums' tau_j, P23's two
//     weights added over distinct ops and tensors); a producer outside its sum's subgraph claims
//     in its sink instance its P25 constant (no priced sum there) or, beside an instance of another
//     sum s', the least of (tau_least(s') - 1) c_x and (1 - 1/tau_least(s')) |o_x| / B (it is
//     priced there and writes o_x). The shape claims the least over the groupings and j's, or P25's
//     term if larger (eval/bound/sums/shared_sums.h).
//  P24 (H6, T1, T2, C2, C4, D2, M1, V1, V5, V11, L1, P7, P12, P13, P14) The per-step excess of
//     streamed weights, without prefetch (H5). With a weight path a step costs max(c, w / Bw, o / B)
//     >= max(c, w / Bw) (with one path max(c, m), m >= w / B: the points below at b = 0), so
//     for a + b = 1 a subgraph costs a N_S + b W_S plus its excess sum_j max(c_j, w_j / Bw) - a N_S -
//     b W_S >= 0 (N_S: its ops' native compute). A MatMul x with K > n whose RHS is a weight it
//     alone reads, in a world class (P14) holding no U op and only twins of x (same K, shape and
//     base, each with a weight of its own, none feeding another) and Pointwise or Layout ops: a
//     subgraph holding twins in F holds only them, epilogues (fire at the last step, C4) and Layout
//     ops, and each step loads exactly k_j wc of each twin's weight (consecutive k-ranges differ,
//     M1): its excess is |F| times one twin's with gamma / |F| of epilogue, at least |F| delta(a),
//     the least over every w, k and gamma. An instance of x upstream of a k-loop computes at least
//     its least non-T factor f (P7, P13; with the weight FIFO, FL requests the whole weight, and
//     SR and FR at most FIFO / K of its columns a step) times c_x. Each such x claims min(delta(a),
//     a (f - 1) c_x) in its island beside a C_I + b W_I / Bw (P12), and in P16's P12 form at
//     (a, 1 - a), where crossing tensors count nothing on the activation path.
//  P26 (G3, M2, V7, V8, V9, L1) A MatMul that must run in its k-loop: x (K > n) whose output is a
//     graph output or a Layout op's input is written by a subgraph where it is a sink, hence in F;
//     and x whose every path to another MatMul enters an op at or below a Layout op that x reaches
//     (Dep(x): an instance of it needs an instance of x in an earlier subgraph, L1) is in F in the
//     first subgraph holding it. Either way P24 drops x's upstream alternative: it claims delta(a).
//  P48 (H6, D2, D5, M1, V8, P24) The LHS strips of a weight-streaming MatMul: with a weight path,
//     when every twin of a qualifying class (P24) reads as its LHS a graph input on the activation
//     path that it alone reads, each step of a tile loads that strip (never retained, V8; no step
//     requests the k-range of the step before it, M1; distinct per twin, D5), o_j >= M_r k_j / B.
//     The least over o_j >= s of max(c, w, o) - (1 - a - b) o is (a + b) max(c, w, s), and per
//     column and step the R rows of tiles cost at least max(R m_j, M k_j / B) against (1 - a) R w_j
//     taken away, at least (m_j - (1 - a) w_j) max(R0, M k_j / (B m_j)): P24's delta with that term
//     in place of R0 (m_j - (1 - a) w_j). eval/bound/traffic/perstep.h.
//  P56 (T1, R5, V2, V8, D2, D5, M1, L1, P24, P48) LHS strips no step holds: in an island's own value,
//     on one path or two, when every twin of a qualifying class (P24) reads as its LHS a tensor no
//     step finds in fast memory (a graph input, never retained, V8; or an op's output larger than
//     the fast memory, R5, made by no Layout op) that the class reads only as twins' LHS, q twins at
//     most per LHS (D5), each step loads at least M_r k_j / q of LHS strips per twin (M1: k <= n <
//     K, V2). With two paths P48's term at that strip; on one path the strip shares the weight's
//     path, so the R >= R0 rows of a column cost at least max(R0 c_j, R0 w_j + M k_j / (q B)) at
//     a = 1. eval/bound/traffic/perstep.h.
//  P57 (W, V8, D3, C3, P24) An upstream weight instance the fast memory cannot hold: on one path a
//     step holds the weight slices it requests (W; a graph input, never retained, V8), so in P24's
//     upstream instance of x in SR or FR each step requests [0, K) x C with |C| <= c = min(n,
//     capacity / K): its factor grows by ceil(N / c) / ceil(N / n), as P24's weight FIFO makes it
//     (FL, the whole weight in a step, is out already when it does not fit, P2).
//     eval/bound/traffic/perstep.h.
//  P50 (T1, T2, H5, H6, L1, L2, V7, V8, V11, R1, P12, P24, P26) Gathers in a window of little
//     compute: no prefetch. A Layout op g of island I whose input's maker x lies in another island,
//     read by z in I: the subgraphs of I after the one that wrote g's input and up to z's first
//     hold first instances only of ops of I that are neither ancestors of x nor forced later (below
//     a Layout op z reaches, or below a MatMul with K > n that first runs in F and reads a
//     Pointwise descendant of z, V11); they gather g's output and load a tensor of every path of
//     I to z's other input. Island I then costs C_I + P24's claims at a = 1 + that PCIe time less
//     the compute and P24 claims of those ops, window by window. eval/bound/islands/gather_windows.h.
//  P51 (T1, H6, G2, G3, C1-C3, D1-D3, V8, V12, L1, P24) The whole weight of an upstream instance:
//     with a FIFO below x's whole weight (c = min(n, FIFO / K) < N), a subgraph holding the sole
//     upstream claimant x upstream of a k-loop loads all of x's weight, and every other op there
//     runs at phi = ceil(N/c) / ceil(N/n) times its native compute, except, where x reaches the
//     sinks only through one exit MatMul m (x's chain as its LHS), m's descendants and LHS
//     producer (Q), beside m's weight (E): P24's bracket there is at least alpha U, U the least
//     of the two hosts' min over X of max((f - 1) c_x + (phi - 1) X, W_x (+ E) - c_x (- Q) - X).
//     eval/bound/traffic/upstream_weight.h.
//  P27 (C1, C4, G2, G3, D1, L2, V5, V12, W, W1, W4, R5, P12, P18) Pointwise ops at the tiles the
//     memory allows. A Pointwise op e (H x W) that the analysis allows mode T only is an epilogue
//     op of every subgraph S holding it (G3's walk reaches it from a Pointwise sink), so S's grid
//     has e's shape (V12) and e pays its base once per tile (C1, C4). When no MatMul of e's shape
//     has K <= n, the top-left tile's step (r = min(h, H), c = min(w, W)) holds two distinct
//     tensors of >= r c: a sink's tile or its retained whole (W1, R5), and a second sink's (every F
//     MatMul a sink: e's sink is Pointwise), an F MatMul's accumulator (n_k >= 2, W4) or retained
//     whole, or, with no F (no MatMul in S), a boundary slice r x c read by the first op or
//     gathered for a Layout op (D1, L2). So 2 r c <= capacity (W): e computes at least base x the
//     fewest such tiles, which P18's line for e claims. And in P18's island lines an output too
//     large to retain, read by an op of another island, was written by a sink of its producer's
//     island (P12: no subgraph holds both; V7, M2, R3): the producer's claim includes the write.
//  P53 (C2, D1, D2, G3, M2, P3, R5, V1, V7, V8, W, W1, W4, P18) An epilogue's reader beside a
//     MatMul: for x whose output only a Pointwise e reads (e reading it alone), e's output q of
//     x's shape too large to retain and read by a Pointwise f alone, take S_f running f: with e
//     and x there, x is beside f, whose other inputs hold their leaves' slices at the top-left
//     tile's last step (a tile, or a MatMul's accumulator or own RHS strip, one more in P18's
//     working set); with e there without x, or e elsewhere (S_f loads q, written by a sink e),
//     x's picked instance is a sink or beside e as a sink, claiming q's write and load. P18's
//     configuration beside e splits in two. eval/bound/traffic/tiles.h.
//  P30 (R5, M1, M2, W, W4, V8, P21) P21's second form, tightened: in the subgraph S_1 that runs x,
//     an input of x too large to retain is loaded slice by slice (never retained, R5; consecutive
//     steps differ in k-range, M1), and when every op of the island has an output too large to
//     retain, S_1's sinks (of x's shape, at least one) write their tiles at each tile's last step
//     (M2; narrow, none claimed under a wide write-back). A shape must fit W at tile 0's first step:
//     the sink's tile (or retained whole), x's operand slices (a weight slice on H6's path counts
//     in no term), and, with epilogue ops in S_1 (gamma > 0), x's accumulator (n_k >= 2, W4).
//  P31 (G3, V2, V5, V11, O8, R5, V8, P21, P25) An isolated tap: a P25 tap t with K > n whose LHS is
//     a graph input or made by a Pointwise op has no internal edge in a sink instance S (its LHS
//     cannot be made there, V11; its RHS is a graph input; its output has no reader in S), so
//     S = {t} (V5): S loads t's LHS per column tile, and costs at least P21's lone price of t, so
//     e_t >= that price - c_t at every lambda. Not under prefetch into double-buffered staging.
//  P54 (D1-D5, G3, G4, M1, R5, V8, V10, W, P25, P28) The LHS strips a tap obtains again: a step
//     whose tile's rows differ from the step before's asks the full-width rows of the tap's LHS A
//     (n_k = 1) afresh (every request of the step before has that step's rows or all rows; A never
//     fits), so it loads them or makes them from the same rows of A's producer's inputs: at least
//     h x phi(A), phi the least frontier width (0 for a tensor that fits). A traversal makes at
//     least T + 1 row or column entries, each row at most C, each column at most R: alone, M phi +
//     the cheapest (R - 1)(C - 1) re-entries (row strips h phi, weight column strips K w, the clipped
//     edge strips at most half); at n_k >= 2 the k-slices' loads (C |u| for a loaded u, a MatMul's
//     LHS rows and own weight slices per tile); beside co-sinks a q-th; in P28's S_1 a fused
//     producer's M phi. eval/bound/sums/taps/strip_frontier.h.
//  P32 (P1, P2, P3, P4, P9, P12, P14, P19, G2, D1, V7, M2, R3, R5) Activations too large to retain.
//     A tensor t made by p, read, no graph output, |t| + 1 > capacity, with a reader c that never
//     shares a subgraph with p (c in another island, or every mode of c has an edge from t that
//     cannot be internal): c's subgraph loads t (never retained), so a sink instance of p wrote it
//     whole. A Pointwise p's picked instance is that sink (T), its write among its own transfers in
//     P14's lines, as a graph output's; inside the islands part an island's P14 value adds
//     (1 - a) x the loads of such t its subgraphs make (|t| per reading island apart from p; none
//     for P19's tensors, whose loads its lines count). eval/bound/islands/activations.h.
//  P35 (P3, P12, P16, R1, R2, V5, V6, V7, V8, L1, T1, H6, D3, G3) Producers run again to serve an
//     island. In P16, a served island J's earliest subgraph S_J reading t follows Q_J, which runs p
//     and retains t; Q_J and the subgraphs before it that retain what the next needs to make t (its
//     chain) lie in p's island I, before S_J, so hold no op that depends on a reader of t in J (on
//     the problem itself, Layout inputs included, L1): their ops lie in U, the ops of I joined to
//     p's ancestors in I by edges that can be internal without such ops. A chain loads a tensor on
//     every path from a graph input to t inside I (V8, P3): at least `any` elements on the
//     activation path, so it costs any / B alone (T1, H6); chains of distinct islands are
//     disjoint. Where U holds no MatMul, no other crossing producer and no tensor too large to
//     retain, P12's form of I counts at most a C_U + (1 - a - b) T_U / B inside chains, so s served
//     islands cost at least s any / B less that, plus P16's unserved loads and write, in place of
//     P16's s instances. eval/bound/islands/recompute.h.
//  P33 (T1, T2, H5, P7, P3, P5, V5, V8, V9, V11, G3, W, W1, W4, H1-H4, R1, R3, R5, M1, M2, D2)
//     Taps that sit alone: a Pointwise s (mode T only) summing MatMuls x with K > n, RHS a graph
//     input, LHS a graph input or Pointwise-made, outputs read by s alone. In s's first subgraph
//     S1 each x is fused (P23's tiles), found retained from the subgraph just before (at most one:
//     that subgraph is {x}) or loaded, and then written before by an instance without s, which
//     is {x} alone (V5, V11) and costs at least max(c_x, its memory at native tiles), prefetch or
//     not. Lines a c_o + (1 - a) own loads per op, best a. eval/bound/sums/taps/lone_taps.h.
//  P39 (W, W1, R1, R5, C2, C3, C5, C6, D2, D3, M1, M2, P5, V8, T1, H5, P33) Lone taps beyond P33.
//     (a) A lone tap alone whose LHS comes retained holds it whole in every step, beside an RHS
//     slice and its output tile: |LHS| + c + r c <= capacity, base per tile, its RHS once per row
//     tile, its output written; P33 prices such a tap alone at the least of that and its LHS
//     loaded, no longer at the LHS read free. (b) A sum that may run upstream of a k-loop but
//     never as an LHS strip (modes T, SR, FL, FR) is priced by P33's lines and, for a first
//     subgraph where it is on no Pointwise path from a sink, lines without P23's tiles: j taps
//     fused there are upstream, hold their RHS slices (distinct graph inputs), so make regions at
//     most floor(capacity / the j least K) wide, each charged its native tiles (C3), and load
//     their own inputs at least once. eval/bound/sums/taps/retained_lhs.h, eval/bound/sums/taps/lone_taps.h.
//  P34 (T1, T2, C3, C6, D2-D5, G3, G4, M1, R5, V8, V11, V12, W, W1, W4, P12, P23) A sum that may
//     run upstream of a k-loop: a Pointwise s with P23's designated inputs, modes T and SL, whose
//     chain (one consumer each) reaches the LHS of one MatMul F (K <= n, mode T only). Its picked
//     subgraph holds it in mode T (P23's step 2), or makes F's LHS strips with n_k = 1 (the
//     unfused inputs' h x K slices, a sink's tile and the own weights' slices in W: the tiles
//     shrink) or with n_k >= 2 (w >= K by V11; every step loads a new slice, M1: each unfused
//     input C times; at most q k-loop MatMuls of the grid hold a tile, W1/W4). In P23's frame at
//     three weights per subgraph, theta = 1, 1/tau and 1/max(tau, C), mixed by one lambda: the
//     compute slack of its own ops, its loads' share, and at 1/C its loads' share less a bound D
//     of what the ops charged under C times their price fall short (sum (a - D)^+ <= slack).
//     e_s = the least over its configurations; P23's sums join as mode-T claimants.
//     eval/bound/sums/upstream/upstream_sums.h.
//  P40 (P34, P13, G3, C6, D1-D4, M1, R5, V8, W, W1) A sum that may make the next MatMul's LHS
//     strip: P34's frame with claimants in modes T, SL and FL, their output fanning out through
//     Pointwise ops of any number of consumers. On no Pointwise path from a sink, s is SL (some
//     MatMul reading a Pointwise descendant as LHS is a k-loop MatMul, the grid is its own: P34's
//     b and c configurations for each such MatMul) or FL only (every step asks full-width rows of
//     each unfused input: rows <= rho_j, s and its fused producers made f_j times over; with tile
//     rows, tau_S >= f_j and the loads' share (1 - 1/f_j) U_j). eval/bound/sums/upstream/lhs_strip_sums.h.
//  P55 (P40, P31, P21, V5, V7, V11, M2, R1, R5, V8) The lone producers of an LHS-strip sum: in P40's
//     value a configuration with j producers fused also claims the m - j least floors of the
//     others, each a sink once (o_x is loaded, never retained, so written), alone there when
//     K > n, its LHS a graph input or Pointwise-made and its RHS a graph input (V11, V5): P21's
//     lone price less c_x; an LHS that fits is found retained only from the subgraph just before
//     (R1), so all but one producer per LHS claim at most the retained price plus the maker's
//     compute run again. And a claimant in mode T lies on a Pointwise path from a sink of its
//     subgraph, of its shape; too large to retain, that sink writes H W / B (P52), its own when no
//     other claimant of the shape has a Pointwise closure meeting the claimant's: P40's T
//     configurations add it to their loads' share. eval/bound/sums/upstream/lone_producers.h,
//     eval/bound/sums/upstream/strip_sink_writes.h.
//  P46 (P40, P23, P34, G3, R5, V8, W1, W4, D5) A sum run once per group of its targets: a P40
//     claimant (T and SL) with t >= 2 targets in mode T only, its output and the Pointwise ops to
//     the targets' LHS too large to retain. Unless some subgraph runs it in mode T (P23's claim,
//     once), none writes those tensors, so every subgraph running a target runs s (SL) and the
//     chain all targets share; an instance at a configuration's tiles holds at most q targets
//     (own RHS slices, tiles at n_k >= 2), so the instances' q add up to t, each claims its
//     configuration, and all but one their s and chain compute, picked once.
//     eval/bound/sums/upstream/target_instances.h.
//  P47 (P46, P40's FL, D3, C6) Targets that may run upstream: P46's count for a claimant that may
//     also run FL, whose targets run in any mode. Without a subgraph running s in mode T, one that
//     runs a target upstream of its k-loop asks full-width rows of s (D3): an FL demand, so that
//     instance claims an FL configuration and may hold all t targets; the others are P46's.
//     eval/bound/sums/upstream/target_instances.h.
//  P36 (T1, T2, H5, H6, P3, P4, P7, P8, V1, V2, V5, V7, V8, V9, V11, G2, D1, L1, L2, R5) A multiply
//     that waits for its own squeeze: a Pointwise m with one input X not made by a Layout op and
//     inputs E_i made by Layout ops l_i, its output Y read by nothing or by MatMuls with K > n only
//     (so m is a sink wherever it runs, V11, V2), where X's producer reaches an input of some l_i.
//     In m's first subgraph S_1 every op reaching an l_i input ran before (L1): S_1 runs it again.
//     S_1 gathers or loads every E_i too large to retain (L2, P4), writes Y (too large, or a graph
//     output), and loads X or makes it again from a cut of its ancestry (graph inputs off H6's
//     weight path and tensors too large to retain, min vertex cut). Its first runs are m and ops
//     joined to it outside Y's descendants and the rerun set (none another such m), so it costs
//     its first runs' native compute plus claim_m = max(0, min(loads with X / B - F, max(c_{p_X},
//     loads with the cut / B - F))): the total is >= sum_o c_o + sum_m claim_m, whole and island
//     by island. eval/bound/islands/squeeze.h.
//  P42 (T1, T2, H6, C3, C6, G3, D2, D3, V3, V5, V8, V11, M1; P14's worlds) Weights that little
//     compute can hide: with a weight path and a checked FIFO, a class of MatMuls with one K > n
//     and one output shape, no input made by a MatMul, its members reading weights. A member in a
//     k-loop shares its subgraph only with the class and Pointwise ops of its shape (T); upstream
//     of a k-loop (priced only when the FIFO bars one step holding it and the first MatMul it
//     reaches, each reached class reading weights) every op but the k-loop's class, its epilogues
//     and its inputs' producers (F1) computes twice. So the total is >= sum_o c_o + max(0, (sum of
//     the members' weights / Bw - C(T u F1)) / 2), the largest over classes. eval/bound/traffic/tap_weights.h.
//  P43 (T1, T2, H6, V1, V5-V8, V11, R1-R3, L1, M1, M2, P3, P7, P12, P16, P24, P26, P35) Heads that
//     load their operand first: a MatMul h with K > n that P26's reason (b) keeps in its k-loop at
//     its first instance S_1(h), reading x made by a Pointwise op p of h's island (V11 keeps p out)
//     and a graph input or Layout output: S_1(h) loads x whole or the subgraph before runs p and
//     retains it. Per reader (such heads, P16's reading islands) a served one has a chain that
//     loads `any` (P35's, through no head's ops); chains of one tensor are disjoint, and all but the
//     earliest come after the first instance of every ancestor of p, so they hold none of what
//     P12's form and P24 count at first instances: each costs at least max(a c_p + (1-a-b) any/B,
//     any/B less its share of the late ops' compute, weights, P24 claims and traffic). An unserved
//     head costs |x|/B less a min(C_N, |x|/B) + b min(W_N/Bw, |x|/B) + its P24 claim. Inside P16's
//     sum, in islands whose every crossing or headed tensor qualifies. eval/bound/islands/internal_heads.h.
//  P38 (T1, T2, H5, P12, P23, C3, P22, V1, V7, R1-R5, W, W1, W4, H1-H4, P3) The unfused inputs of
//     a sum, written and loaded: a Pointwise s in modes T or SL only, its inputs o_i made by
//     MatMuls x_i and read by s alone (any size). In its picked subgraph S_s, j of the x_i are fused
//     (T: P23's tiles with the rho retained o_i whole in W, tau; SL: Factor(s, SL) passes), rho
//     retained (fitting together) and the rest loaded there and written before, in s's island. Over
//     the island's subgraphs sum C_S >= C_I + sum_s (tau - 1) X0_j and sum M_S >= T_I / B + sum_s
//     W_{j,rho}; at one lambda per island, inside the islands part. eval/bound/sums/written_sums.h.
// Coupling (P8, P9): when t's only consumer c is a MatMul and t is too large to retain, either
// some instance of c has t's producer p beside it (p then in a strip or full mode) or every
// instance of p is a sink and c loads t, which p wrote; p's mode T carries the least load and
// the write, c's modes that cannot see t ephemeral carry the rest.
// What it does not count: reuse lost to traversal order when operands are shared or K > n
// beyond P5, working sets that force small tiles (except P10, P11, P18 for k-loop MatMuls and
// P27 for Pointwise ops on the tile side: not for ops upstream of a k-loop beyond P22),
// recomputation beyond P7 and
// P13, write-backs of sinks nobody reads, activations reloaded because retention lasts one
// subgraph (except P15, P16), and the per-step max (only sums, per problem, island or P14's subgraph classes; except P21 for
// a MatMul that sits alone, P23 per subgraph for a sum of outputs too large to retain, P25 for a
// MatMul whose output leaves its subgraph, and P24
// for weights streamed over k-steps without prefetch). It
// is a bound, not an estimate.
#pragma once

#include <vector>

#include "eval/bound/lower_bound.h"
#include "eval/model/problem.h"

namespace annealer {

BoundModel BuildBoundModel(const Problem& problem);
// When `model` is given, it also receives BuildBoundModel(problem): both come from one build,
// which on a graph of 10,000 ops takes a few hundred milliseconds.
LowerBound ComputeLowerBound(const Problem& problem, BoundModel* model = nullptr);

// A lower bound on the latency of running the ops with op_remaining[op] != 0 (at least one
// instance of each, in any subgraphs, after any prefix of subgraphs), valid whatever the prefix
// executed or retained: max of their compute, of their forced traffic, and of the combined bound
// at the model's weight. It assumes: (a) a retained-in tensor is free, so only traffic of
// tensors that can never be retained (graph inputs, |t| + 1 > capacity) is claimed for loads;
// (b) an op that already ran may run again (recomputation), so ephemeral inputs stay possible;
// (c) a write is counted only when its producer is remaining (then the tensor cannot exist yet);
// (d) a shared-load term counts when any of its consumers is remaining. O(options) per call.
Latency RemainingLowerBound(const BoundModel& model, const std::vector<char>& op_remaining);

}  // namespace annealer
