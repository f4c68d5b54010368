//! `Upstash-Retry-Delay`: an arithmetic expression giving the wait before a retry in
//! milliseconds, of the variable `retried` (how many retries were made before this one: 0 for
//! the first), numbers, `+ - * /`, parentheses and the functions `pow`, `exp`, `sqrt`, `abs`,
//! `floor`, `ceil`, `round`, `min` and `max`, e.g. `pow(2, retried) * 1000`.

/// The longest expression accepted.
pub(crate) const MAX_LEN: usize = 256;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Number(f64),
    Retried,
    Neg(Box<Node>),
    Binary(char, Box<Node>, Box<Node>),
    Call(&'static str, Vec<Node>),
}

/// The functions and how many arguments each takes (`None`: two or more).
const FUNCTIONS: &[(&str, Option<usize>)] = &[
    ("pow", Some(2)),
    ("exp", Some(1)),
    ("sqrt", Some(1)),
    ("abs", Some(1)),
    ("floor", Some(1)),
    ("ceil", Some(1)),
    ("round", Some(1)),
    ("min", None),
    ("max", None),
];

/// Checks `text`; why it is not an expression.
pub(crate) fn check(text: &str) -> Result<(), String> {
    if text.len() > MAX_LEN {
        return Err(format!("longer than {MAX_LEN} characters"));
    }
    let node = parse(text)?;
    match eval(&node, 0.0) {
        v if v.is_finite() => Ok(()),
        _ => Err("its value for retried = 0 is not a number".into()),
    }
}

/// The wait `text` gives after `retried` retries, in milliseconds (0 when it is negative or not
/// a number, or when `text` does not parse: it was checked at publish).
pub(crate) fn wait_ms(text: &str, retried: u32) -> u64 {
    match parse(text).map(|node| eval(&node, f64::from(retried))) {
        Ok(v) if v.is_finite() && v > 0.0 => v.min(u64::MAX as f64) as u64,
        _ => 0,
    }
}

fn eval(node: &Node, retried: f64) -> f64 {
    match node {
        Node::Number(n) => *n,
        Node::Retried => retried,
        Node::Neg(inner) => -eval(inner, retried),
        Node::Binary(op, a, b) => {
            let (a, b) = (eval(a, retried), eval(b, retried));
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                _ => a / b,
            }
        }
        Node::Call(name, args) => {
            let v: Vec<f64> = args.iter().map(|a| eval(a, retried)).collect();
            match *name {
                "pow" => v[0].powf(v[1]),
                "exp" => v[0].exp(),
                "sqrt" => v[0].sqrt(),
                "abs" => v[0].abs(),
                "floor" => v[0].floor(),
                "ceil" => v[0].ceil(),
                "round" => v[0].round(),
                "min" => v.iter().copied().fold(f64::INFINITY, f64::min),
                _ => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        }
    }
}

fn parse(text: &str) -> Result<Node, String> {
    let mut parser = Parser {
        chars: text.chars().collect(),
        at: 0,
        depth: 0,
    };
    let node = parser.sum()?;
    match parser.peek() {
        None => Ok(node),
        Some(c) => Err(format!("unexpected {c:?}")),
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    /// Nesting, bounded so that a deep expression cannot exhaust the stack.
    depth: usize,
}

impl Parser {
    /// The next character that is not white space.
    fn peek(&mut self) -> Option<char> {
        while self.raw().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
        self.raw()
    }

    /// The next character, white space included (inside a number or a name).
    fn raw(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn sum(&mut self) -> Result<Node, String> {
        let mut node = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            node = Node::Binary(op, Box::new(node), Box::new(self.product()?));
        }
        Ok(node)
    }

    fn product(&mut self) -> Result<Node, String> {
        let mut node = self.unary()?;
        while let Some(op @ ('*' | '/')) = self.peek() {
            self.at += 1;
            node = Node::Binary(op, Box::new(node), Box::new(self.unary()?));
        }
        Ok(node)
    }

    fn unary(&mut self) -> Result<Node, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("nested too deeply".into());
        }
        let node = match self.peek() {
            Some('-') => {
                self.at += 1;
                Node::Neg(Box::new(self.unary()?))
            }
            Some('(') => {
                self.at += 1;
                let inner = self.sum()?;
                self.expect(')')?;
                inner
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number()?,
            Some(c) if c.is_ascii_alphabetic() => self.name()?,
            Some(c) => return Err(format!("unexpected {c:?}")),
            None => return Err("the expression ends too soon".into()),
        };
        self.depth -= 1;
        Ok(node)
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        match self.peek() {
            Some(got) if got == c => {
                self.at += 1;
                Ok(())
            }
            _ => Err(format!("{c:?} expected")),
        }
    }

    fn number(&mut self) -> Result<Node, String> {
        let start = self.at;
        while matches!(self.raw(), Some(c) if c.is_ascii_digit() || c == '.') {
            self.at += 1;
        }
        let text: String = self.chars[start..self.at].iter().collect();
        text.parse()
            .map(Node::Number)
            .map_err(|_| format!("bad number {text:?}"))
    }

    fn name(&mut self) -> Result<Node, String> {
        let start = self.at;
        while matches!(self.raw(), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
            self.at += 1;
        }
        let name: String = self.chars[start..self.at].iter().collect();
        if name == "retried" {
            return Ok(Node::Retried);
        }
        let Some(&(known, arity)) = FUNCTIONS.iter().find(|(f, _)| *f == name) else {
            return Err(format!("unknown name {name:?}"));
        };
        self.expect('(')?;
        let mut args = vec![self.sum()?];
        while self.peek() == Some(',') {
            self.at += 1;
            args.push(self.sum()?);
        }
        self.expect(')')?;
        let fits = match arity {
            Some(n) => args.len() == n,
            None => args.len() >= 2,
        };
        match fits {
            true => Ok(Node::Call(known, args)),
            false => Err(format!(
                "{name} takes {} arguments",
                arity.map_or("2 or more".into(), |n| n.to_string())
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_examples() {
        assert_eq!(wait_ms("1000", 3), 1000);
        assert_eq!(wait_ms("1000 * (1 + retried)", 0), 1000);
        assert_eq!(wait_ms("1000 * (1 + retried)", 2), 3000);
        assert_eq!(wait_ms("pow(2, retried) * 1000", 3), 8000);
        assert_eq!(wait_ms("max(10, min(5000, 100 * retried))", 100), 5000);
        assert_eq!(
            wait_ms(
                "floor(exp(1)) + ceil(0.2) + round(1.5) + abs(-1) + sqrt(16)",
                0
            ),
            10
        );
        assert_eq!(wait_ms("2 - 3 * 4 / 2", 0), 0, "negative is no wait");
        assert_eq!(wait_ms("-(-5)", 0), 5);
    }

    #[test]
    fn refused() {
        for bad in [
            "",
            "retried +",
            "1000 *",
            "pow(2)",
            "min(1)",
            "nope(1)",
            "1 2",
            "(1",
            "1)",
            "1000 % 3",
            "1/0",
            "retried.x",
            "1..2",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
        assert!(check(&"(".repeat(100)).is_err());
        assert!(check(&"1+".repeat(200)).is_err());
        assert!(check("pow(2, retried) * 1000").is_ok());
    }
}
